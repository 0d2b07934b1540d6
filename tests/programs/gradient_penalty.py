"""Higher-order autograd as people use it: a WGAN-GP gradient penalty (autograd.grad with create_graph=True,
then backward through it), a double-backward Hessian-vector product, and torch.autograd.functional.jacobian /
hessian / vjp / hvp checked against closed forms."""
import ember as torch
import ember.autograd as autograd
import ember.nn as nn


def compute_gradient_penalty(D, real_samples, fake_samples):
    """Calculates the gradient penalty loss for WGAN GP"""
    alpha = torch.rand(real_samples.size(0), 1)
    interpolates = (alpha * real_samples + ((1 - alpha) * fake_samples)).requires_grad_(True)
    d_interpolates = D(interpolates)
    fake = torch.ones(real_samples.shape[0], 1, requires_grad=False)
    gradients = autograd.grad(
        outputs=d_interpolates,
        inputs=interpolates,
        grad_outputs=fake,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    gradients = gradients.view(gradients.size(0), -1)
    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean()
    return gradient_penalty


def critic_with_penalty(steps=40):
    torch.manual_seed(0)
    D = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Linear(16, 1))
    optimizer = torch.optim.Adam(D.parameters(), lr=1e-2, betas=(0.5, 0.9))
    real = torch.randn(64, 2) + torch.tensor([2.0, 0.0])
    fake = torch.randn(64, 2) - torch.tensor([2.0, 0.0])
    penalties, gaps = [], []
    for _ in range(steps):
        optimizer.zero_grad()
        gp = compute_gradient_penalty(D, real, fake)
        gap = D(real).mean() - D(fake).mean()
        loss = -gap + 10 * gp
        loss.backward()
        optimizer.step()
        penalties.append(gp.item())
        gaps.append(gap.item())
    grads_set = all(p.grad is not None for p in D.parameters())
    return penalties, gaps, grads_set


def hessian_vector_product():
    x = torch.randn(5, requires_grad=True)
    v = torch.randn(5)
    y = (x ** 3).sum() + (x[0] * x[1])
    grad, = torch.autograd.grad(y, x, create_graph=True)
    hv, = torch.autograd.grad(grad, x, grad_outputs=v)
    expected = 6 * x.detach() * v + torch.tensor([v[1], v[0], 0., 0., 0.])
    return (hv - expected).abs().max().item()


def functional_api():
    from ember.autograd.functional import hessian, hvp, jacobian, vjp

    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = torch.rand(2, 2)
    jac = jacobian(exp_reducer, inputs)
    expected_jac = torch.zeros(2, 2, 2)
    expected_jac[0, 0] = inputs[0].exp()
    expected_jac[1, 1] = inputs[1].exp()
    jac_err = (jac - expected_jac).abs().max().item()

    def pow_reducer(x):
        return x.pow(3).sum()

    inputs = torch.rand(2, 2)
    hess = hessian(pow_reducer, inputs)
    expected_hess = torch.diag_embed(6 * inputs.view(-1)).view(2, 2, 2, 2)
    hess_err = (hess - expected_hess).abs().max().item()

    def f(x, y):
        return (x * y).sum()

    x, y = torch.randn(3), torch.randn(3)
    (jx, jy) = jacobian(f, (x, y))
    jac_tuple_err = max((jx - y).abs().max().item(), (jy - x).abs().max().item())

    out, vjp_value = vjp(exp_reducer, torch.ones(2, 3), torch.tensor([1.0, 2.0]))
    vjp_err = (vjp_value - torch.tensor([[1.0], [2.0]]) * torch.e).abs().max().item()

    _, hvp_value = hvp(pow_reducer, inputs, torch.ones(2, 2))
    hvp_err = (hvp_value - 6 * inputs).abs().max().item()
    return {"jacobian": jac_err, "hessian": hess_err, "jacobian_tuple": jac_tuple_err, "vjp": vjp_err,
            "hvp": hvp_err, "jacobian_shape": tuple(jac.shape), "hessian_shape": tuple(hess.shape)}


def main():
    penalties, gaps, grads_set = critic_with_penalty()
    errors = functional_api()
    errors["hessian_vector_product"] = hessian_vector_product()
    return {"penalties": penalties, "gaps": gaps, "grads_set": grads_set, "errors": errors}


if __name__ == "__main__":
    main()
