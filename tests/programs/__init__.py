"""Short PyTorch tutorial-style programs written against ``import ember as torch`` (run by test_real_programs.py)."""
