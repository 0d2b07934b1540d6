"""CUDA's runtime state, below the tensor layer: whether CUDA can be used and its lazy initialisation
(``availability``), the device type (``device``), the current CUDA device and its properties (``gpus``), streams
and events (``streams``), and the CUDA generators' seeds and offsets (``generators``).

The tensor layer imports these at the top of its modules, and ``ember.cuda`` (torch.cuda's facade, above the tensor
layer) re-exports them. Nothing here imports ``ember.tensor``, and nothing imports numba-cuda at module import:
``availability`` loads it when CUDA is first asked about, and the CUDA backend (``ember.kernels.cuda``) loads on
first use.
"""
