""""Learning PyTorch with Examples": fit sin(x) with a cubic three ways: raw tensors with manual updates under
no_grad, a custom autograd.Function (LegendrePolynomial3), and nn.Sequential + Flatten(0, 1) + RMSprop."""
import math

import ember as torch


def sine_data():
    dtype = torch.float
    device = torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 500, device=device, dtype=dtype)
    return x, torch.sin(x)


def gradient_descent(params, predict, x, y, learning_rate, steps):
    """Plain gradient descent on the summed squared error, raw tensors updated in place under no_grad."""
    losses = []
    for t in range(steps):
        y_pred = predict(x)
        loss = (y_pred - y).pow(2).sum()
        losses.append(loss.item())
        if t % 100 == 99:
            print(t, loss.item())
        loss.backward()

        with torch.no_grad():
            for param in params:
                param -= learning_rate * param.grad
                param.grad = None
    return losses


def fit_with_tensors(steps=500):
    x, y = sine_data()
    a = torch.randn((), dtype=x.dtype, requires_grad=True)
    b = torch.randn((), dtype=x.dtype, requires_grad=True)
    c = torch.randn((), dtype=x.dtype, requires_grad=True)
    d = torch.randn((), dtype=x.dtype, requires_grad=True)

    losses = gradient_descent((a, b, c, d), lambda x: a + b * x + c * x ** 2 + d * x ** 3, x, y, 1e-6, steps)
    print(f'Result: y = {a.item()} + {b.item()} x + {c.item()} x^2 + {d.item()} x^3')
    return losses


class LegendrePolynomial3(torch.autograd.Function):
    """P3(x) = 0.5 * (5x^3 - 3x) with a hand-written backward."""

    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return 0.5 * (5 * input ** 3 - 3 * input)

    @staticmethod
    def backward(ctx, grad_output):
        input, = ctx.saved_tensors
        return grad_output * 1.5 * (5 * input ** 2 - 1)


def fit_with_function(steps=500):
    x, y = sine_data()
    a = torch.full((), 0.0, dtype=x.dtype, requires_grad=True)
    b = torch.full((), -1.0, dtype=x.dtype, requires_grad=True)
    c = torch.full((), 0.0, dtype=x.dtype, requires_grad=True)
    d = torch.full((), 0.3, dtype=x.dtype, requires_grad=True)

    P3 = LegendrePolynomial3.apply
    losses = gradient_descent((a, b, c, d), lambda x: a + b * P3(c + d * x), x, y, 5e-6, steps)
    print(f'Result: y = {a.item()} + {b.item()} * P3({c.item()} + {d.item()} x)')
    return losses


def fit_with_nn(steps=500):
    x, y = sine_data()

    p = torch.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)

    model = torch.nn.Sequential(
        torch.nn.Linear(3, 1),
        torch.nn.Flatten(0, 1)
    )
    loss_fn = torch.nn.MSELoss(reduction='sum')

    learning_rate = 1e-3
    optimizer = torch.optim.RMSprop(model.parameters(), lr=learning_rate)
    losses = []
    for t in range(steps):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    linear_layer = model[0]
    print(f'Result: y = {linear_layer.bias.item()} + {linear_layer.weight[:, 0].item()} x + '
          f'{linear_layer.weight[:, 1].item()} x^2 + {linear_layer.weight[:, 2].item()} x^3')
    return losses, xx.shape, y_pred.shape


def main():
    torch.manual_seed(0)
    tensors = fit_with_tensors()
    function = fit_with_function()
    nn_losses, features_shape, pred_shape = fit_with_nn()
    return {"tensors": tensors, "function": function, "nn": nn_losses,
            "features_shape": tuple(features_shape), "pred_shape": tuple(pred_shape)}


if __name__ == "__main__":
    main()
