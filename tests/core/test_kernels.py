"""The kernels (Appendix A, arc-cosine step, dot-product forms) against independent estimates."""

import math

import numpy as np
import pytest
import torch

from depthlab.core.stopping import StopRule
from depthlab.core import kernel_regression as KR
from depthlab.core import kernels as K
from depthlab.core import tangent as T
from depthlab.core.linalg import cholesky_with_jitter
from depthlab.studies.mori_ueda.targets import sample_inputs, target


class dl:  # the names these tests use, from where they live now
    sample_inputs = staticmethod(sample_inputs)
    target = staticmethod(target)
    kernel = staticmethod(K.kernel)
    kernel_diagonal = staticmethod(K.kernel_diagonal)

    @staticmethod
    def kernel_regression(*a, **k):
        fit = KR.kernel_regression(*a, **k)
        fit.prediction, fit.train_prediction, fit.jitter = fit.prediction[0], fit.train_prediction[0], fit.jitter[0]
        return fit


def empirical_ntk(
    x: np.ndarray, depth: int, width: int, beta: float, seed: int, first_scale: float = 1.0
) -> np.ndarray:
    """Gram of parameter gradients, sum_p df(x)/dp df(x')/dp, of one finite net at init.

    Parameterisation that Eqs. (13)-(17) describe: f = w~_{L+1} sqrt(2/h) z_L + beta b~_{L+1},
    pre-activations w~_l sqrt(c_l/n_{l-1}) z_{l-1} + beta b~_l with w~, b~ ~ N(0, 1), where c_1 = 1
    (so that Sigma^(0) = x.x'/d + beta^2, Eq. 13) and c_l = 2 for l >= 2.
    """
    g = torch.Generator().manual_seed(seed)
    d = x.shape[1]
    sizes = [d] + [width] * depth + [1]
    ws = [
        torch.randn(a, b, generator=g, dtype=torch.float64, requires_grad=True) for a, b in zip(sizes[:-1], sizes[1:])
    ]
    bs = [torch.randn(b, generator=g, dtype=torch.float64, requires_grad=True) for b in sizes[1:]]
    scales = [(first_scale / d) ** 0.5] + [(2.0 / width) ** 0.5] * depth
    rows = []
    for xi in torch.as_tensor(x):
        a = xi[None]
        for ell, (w, b, c) in enumerate(zip(ws, bs, scales)):
            a = a @ w * c + beta * b
            if ell < depth:
                a = torch.relu(a)
        grads = torch.autograd.grad(a.sum(), ws + bs)
        rows.append(torch.cat([t.reshape(-1) for t in grads]))
    J = torch.stack(rows)  # [n, n_params]
    return (J @ J.T).numpy()


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_analytic_matches_empirical_wide_net(depth):
    x = dl.sample_inputs(6, 5, seed=0)
    emp = np.mean([empirical_ntk(x, depth, 1024, 0.1, seed) for seed in range(10)], axis=0)
    assert rel(emp, dl.kernel(x, x, depth, beta=0.1)) < 0.06


def test_empirical_check_can_fail():
    # scaling the first layer by sqrt(2/d) (the other reading of Appendix A) doubles x.x'/d: the check must notice
    x = dl.sample_inputs(6, 5, seed=0)
    emp = np.mean([empirical_ntk(x, 2, 1024, 0.1, seed, first_scale=2.0) for seed in range(3)], axis=0)
    assert rel(emp, dl.kernel(x, x, 2, beta=0.1)) > 0.2


def footnote4_ntk(x1: np.ndarray, x2: np.ndarray, depth: int) -> np.ndarray:
    """beta = 0 closed form (footnote 4): angle recursion, written independently of Eq. (16)."""
    d = x1.shape[1]
    r = np.outer(np.linalg.norm(x1, axis=1), np.linalg.norm(x2, axis=1)) / d
    cos0 = np.clip(x1 @ x2.T / d / r, -1, 1)
    thetas = [np.arccos(cos0)]
    for _ in range(depth):
        t = thetas[-1]
        thetas.append(np.arccos(np.clip((np.sin(t) + (np.pi - t) * np.cos(t)) / np.pi, -1, 1)))
    sig = [r * np.cos(t) for t in thetas]  # Sigma^(l), l = 0..L
    sdot = [None] + [1 - thetas[ell - 1] / np.pi for ell in range(1, depth + 1)] + [np.ones_like(r)]
    out = np.zeros_like(r)
    for ell in range(1, depth + 2):  # Eq. (15), literally
        prod = np.ones_like(r)
        for lp in range(ell, depth + 2):
            prod = prod * sdot[lp]
        out += sig[ell - 1] * prod
    return out


@pytest.mark.parametrize("depth", [1, 2, 5, 10])
def test_beta_zero_matches_angle_recursion(depth):
    x1 = dl.sample_inputs(7, 4, seed=1)
    x2 = dl.sample_inputs(5, 4, seed=2)
    np.testing.assert_allclose(dl.kernel(x1, x2, depth, beta=0.0), footnote4_ntk(x1, x2, depth), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("depth", [1, 3, 10])
@pytest.mark.parametrize("beta", [0.0, 0.1, 0.5])
def test_diagonal_closed_form(depth, beta):
    x = dl.sample_inputs(9, 6, seed=4)
    # det Lambda = 0 on the diagonal; float64 rounding of ~1e-16 there becomes ~1e-8 after sqrt()
    np.testing.assert_allclose(np.diag(dl.kernel(x, x, depth, beta)), dl.kernel_diagonal(x, depth, beta), rtol=1e-7)


def arccos_appendix_a(x1: np.ndarray, x2: np.ndarray, depth: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """Eqs. (13)-(17) written independently, in the angle form of the arc-cosine kernels (numpy, arccos):

    with cos(theta) = Sigma(x,x') / sqrt(Sigma(x,x) Sigma(x',x')),
    Sigma^(l) = sqrt(Sigma(x,x) Sigma(x',x')) (sin theta + (pi - theta) cos theta) / pi + beta^2, Sigmadot^(l) = (pi - theta) / pi,
    and the diagonal Sigma^(l)(x, x) = Sigma^(l-1)(x, x) + beta^2 (a ReLU layer keeps half the second moment, times 2).
    """
    d = x1.shape[1]
    b2 = beta * beta
    sig = x1 @ x2.T / d + b2
    q1 = (x1 * x1).sum(1)[:, None] / d + b2
    q2 = (x2 * x2).sum(1)[None, :] / d + b2
    theta = sig.copy()
    for _ in range(depth):
        norm = np.sqrt(q1 * q2)
        t = np.arccos(np.clip(sig / norm, -1.0, 1.0))
        sig = norm * (np.sin(t) + (np.pi - t) * np.cos(t)) / np.pi + b2
        theta = theta * (np.pi - t) / np.pi + sig
        q1, q2 = q1 + b2, q2 + b2
    return sig, theta


def test_one_pass_matches_an_independent_arccos_form_at_every_depth_in_float64():
    x = dl.sample_inputs(8, 3, seed=5)
    y = dl.sample_inputs(6, 3, seed=6)
    seen = 0
    for ell, sig, th in K.appendix_a(torch.as_tensor(x), torch.as_tensor(y), 6, 0.1):
        assert th.dtype == torch.float64
        ref_sig, ref_th = arccos_appendix_a(x, y, ell, 0.1)
        np.testing.assert_allclose(th.numpy(), ref_th, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(sig.numpy(), ref_sig, rtol=1e-11, atol=1e-13)
        np.testing.assert_allclose(dl.kernel(x, y, ell, 0.1), ref_th, rtol=1e-11, atol=1e-13)
        seen += 1
    assert seen == 6


def test_kernel_regression_interpolates_and_matches_direct_solve():
    x = dl.sample_inputs(300, 10, seed=6)
    y = dl.target(x, 2, "local")
    xt = dl.sample_inputs(50, 10, seed=7)
    fit = dl.kernel_regression(x, y, xt, depths=[1, 3], beta=0.1, block=64, device="cpu")
    for i, L in enumerate([1, 3]):
        assert fit.jitter[i] == 0.0
        np.testing.assert_allclose(fit.train_prediction[i], y, atol=1e-6)
        K = dl.kernel(x, x, L)
        direct = dl.kernel(xt, x, L) @ np.linalg.solve(K, y)
        np.testing.assert_allclose(fit.prediction[i], direct, rtol=1e-6, atol=1e-8)


def test_jitter_is_recorded_when_gram_is_singular():
    G = torch.ones(6, 6, dtype=torch.float64)  # rank 1
    C, jit = cholesky_with_jitter(G)
    assert jit > 0
    np.testing.assert_allclose((C @ C.T).numpy(), G.numpy() + jit * np.eye(6), atol=1e-12)
    x = dl.sample_inputs(30, 4, seed=8)
    x = np.concatenate([x] * 4)  # every point four times: 90 zero eigenvalues up to rounding
    y = np.tile(np.arange(30.0), 4)
    fit = dl.kernel_regression(x, y, x[:5], depths=[2], device="cpu")
    assert fit.jitter[0] > 0
    np.testing.assert_allclose(fit.prediction[0], y[:5], atol=1e-3)  # still interpolates (consistent duplicates)


def previous_recursion(x1, x2, max_depth, beta):
    """The recursion as it stood before the shared layer step (commit 06451ca), kept verbatim as a reference."""
    d = x1.shape[1]
    b2 = beta * beta
    n1 = (x1 * x1).sum(1) / d
    n2 = (x2 * x2).sum(1) / d
    sig = torch.addmm(torch.full((), b2, dtype=x1.dtype), x1, x2.T, alpha=1.0 / d)
    theta = sig.clone()
    buf = torch.empty_like(sig)
    out = []
    for ell in range(1, max_depth + 1):
        sqrt_det = torch.outer(n1 + ell * b2, n2 + ell * b2).addcmul_(sig, sig, value=-1.0).clamp_(min=0.0).sqrt_()
        phase = torch.div(sig, sqrt_det, out=buf).atan_()
        theta.mul_(phase.mul(1.0 / math.pi).add_(0.5))
        sig.mul_(phase.add_(math.pi / 2)).add_(sqrt_det).div_(math.pi).add_(b2)
        theta.add_(sig)
        out.append((sig.clone(), theta.clone()))
    return out


@pytest.mark.parametrize("beta", [0.0, 0.1, 0.7])
def test_shared_layer_step_reproduces_the_previous_recursion(beta):
    x1 = torch.as_tensor(dl.sample_inputs(40, 9, seed=11))
    x2 = torch.as_tensor(dl.sample_inputs(30, 9, seed=12))
    for (_ell, sig, th), (sig0, th0) in zip(K.appendix_a(x1, x2, 10, beta), previous_recursion(x1, x2, 10, beta)):
        np.testing.assert_allclose(sig.numpy(), sig0.numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(th.numpy(), th0.numpy(), rtol=1e-12, atol=1e-14)


def arccos_forms(u, layers):
    """Bietti & Bach's kappa_RF^L, kappa_NTK^L from the closed forms, with numpy's arccos (independent of relu_layer_)."""
    k0 = lambda v: 1 - np.arccos(np.clip(v, -1, 1)) / np.pi  # noqa: E731
    k1 = lambda v: (np.sqrt(np.clip(1 - v * v, 0, None)) + v * (np.pi - np.arccos(np.clip(v, -1, 1)))) / np.pi  # noqa: E731
    rf, ntk = u.copy(), u.copy()
    for _ in range(2, layers + 1):
        ntk = ntk * k0(rf)
        rf = k1(rf)
        ntk = ntk + rf
    return rf, ntk


@pytest.mark.parametrize("layers", [1, 2, 3, 6])
def test_dot_product_forms_match_arccos_closed_forms(layers):
    u = np.linspace(-1, 1, 201)
    rf, ntk = arccos_forms(u, layers)
    *_, (L, ours_rf, ours_ntk) = K.dot_forms(u, layers)
    assert L == layers
    np.testing.assert_allclose(ours_rf, rf, atol=1e-13)
    np.testing.assert_allclose(ours_ntk, ntk, atol=1e-13)


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_appendix_a_with_beta_zero_on_the_sphere_is_the_dot_product_forms(depth):
    d = 7
    x = dl.sample_inputs(12, d, seed=13)
    x *= np.sqrt(d) / np.linalg.norm(x, axis=1, keepdims=True)  # |x|^2 = d, so Sigma^(0) = u = cos(angle)
    u = np.clip(x @ x.T / d, -1, 1)
    rf, ntk = arccos_forms(u, depth + 1)  # L hidden layers = L + 1 layers in Bietti & Bach's count
    np.testing.assert_allclose(dl.kernel(x, x, depth, beta=0.0, kind="nngp"), rf, atol=1e-7)  # diagonal: sqrt(1e-16)
    np.testing.assert_allclose(dl.kernel(x, x, depth, beta=0.0), ntk, atol=1e-7 * (depth + 1))


def output_covariance(x, depth, width, beta, n_nets, seed, chunk=250):
    """Monte-Carlo E[f(x) f(x')] over random nets in the parameterisation of Appendix A (the NNGP kernel), ``chunk`` nets
    at a time."""
    g = torch.Generator().manual_seed(seed)
    d = x.shape[1]
    sizes = [d] + [width] * depth + [1]
    total = 0
    for start in range(0, n_nets, chunk):
        m = min(chunk, n_nets - start)
        a = torch.as_tensor(x).expand(m, -1, -1)
        for ell, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:])):
            c = 1.0 if ell == 0 else 2.0
            W = torch.randn(m, fi, fo, generator=g, dtype=torch.float64) * math.sqrt(c / fi)
            b = torch.randn(m, 1, fo, generator=g, dtype=torch.float64) * beta
            a = torch.baddbmm(b, a, W)
            if ell < depth:
                a = torch.relu(a)
        f = a.squeeze(-1)  # [m, n]
        total = total + f.T @ f
    return (total / n_nets).numpy()


@pytest.mark.parametrize("depth,width", [(1, 256), (3, 128)])
def test_nngp_matches_the_output_covariance_of_random_wide_nets(depth, width):
    x = dl.sample_inputs(5, 4, seed=14)
    emp = output_covariance(x, depth, width, 0.3, 4000, 0)
    assert rel(emp, dl.kernel(x, x, depth, beta=0.3, kind="nngp")) < 0.05
    # and the check can fail: the NTK is not the output covariance
    assert rel(emp, dl.kernel(x, x, depth, beta=0.3)) > 0.3


def test_nngp_regression_matches_direct_solve():
    x = dl.sample_inputs(200, 6, seed=15)
    y = dl.target(x, 2, "local")
    xt = dl.sample_inputs(30, 6, seed=16)
    fit = KR.kernel_regression(x, y, xt, depths=[2], beta=0.1, block=37, device="cpu", kinds=("ntk", "nngp"))
    for i, kind in enumerate(("ntk", "nngp")):
        G = dl.kernel(x, x, 2, kind=kind)
        np.fill_diagonal(G, dl.kernel_diagonal(x, 2, kind=kind))
        direct = dl.kernel(xt, x, 2, kind=kind) @ np.linalg.solve(G, y)
        np.testing.assert_allclose(fit.prediction[i, 0], direct, rtol=1e-6, atol=1e-8)


# ---- the empirical tangent kernel of a finite net ---------------------------------------------

from depthlab.core.losses.mse import MSE  # noqa: E402
from depthlab.core.mlp import forward, init_params, predict  # noqa: E402
from depthlab.core.optim.sgd import SGD  # noqa: E402
from depthlab.core.shapes import layer_sizes  # noqa: E402
from depthlab.core.trainer import TrainSettings, train  # noqa: E402


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_empirical_ntk_equals_autograd_jacobian_products(depth):
    p = init_params(layer_sizes(3, 7, depth), np.array([0, 1]), "glorot_uniform", torch.float64)
    for _W, b in p:
        b.normal_(generator=torch.Generator().manual_seed(depth))  # nonzero biases: their terms are checked too
    x1 = dl.sample_inputs(5, 3, seed=20)
    x2 = dl.sample_inputs(4, 3, seed=21)
    theta, f1, f2 = T.empirical_ntk(p, x1, x2, m=1, block=2)

    def jac(x):
        leaves = [t[1:2].clone().requires_grad_(True) for W, b in p for t in (W, b)]
        rows = []
        for i in range(len(x)):
            out = forward([(leaves[2 * j], leaves[2 * j + 1]) for j in range(len(p))], torch.as_tensor(x[i : i + 1]))[
                0, 0
            ]
            rows.append(torch.cat([g.reshape(-1) for g in torch.autograd.grad(out, leaves)]))
        return torch.stack(rows)

    np.testing.assert_allclose(theta, (jac(x1) @ jac(x2).T).numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(f1, predict(p, x1)[1], rtol=1e-12)


def test_the_blocked_kernel_product_equals_the_whole_kernel_times_the_vector():
    """The lazy limit's test rows go through in blocks (no n_test x n kernel held): Theta_hat(x1, x2) @ v by
    blocks of 3 rows against the whole kernel from empirical_ntk."""
    p = init_params(layer_sizes(3, 7, 2), np.array([0, 1]), "glorot_uniform", torch.float64)
    x1, x2 = dl.sample_inputs(10, 3, seed=1), dl.sample_inputs(6, 3, seed=2)
    v = np.random.default_rng(0).standard_normal(6)
    K, f1, _ = T.empirical_ntk(p, x1, x2, m=1)
    kv, g1 = T.empirical_ntk_apply(p, x1, x2, v, m=1, block=3)
    np.testing.assert_allclose(kv, K @ v, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(g1, f1, rtol=1e-14)


def test_kernel_change_is_the_relative_frobenius_distance_of_autograd_kernels():
    """Claim 5's laziness measure against an independent estimate: Theta_hat from autograd Jacobians at init and after a
    perturbation of every parameter, |K_T - K_0|_F / |K_0|_F; 0 for an untouched net, NaN for a diverged one."""
    p0 = init_params(layer_sizes(3, 6, 2), np.array([0, 1]), "glorot_uniform", torch.float64)
    g = torch.Generator().manual_seed(7)
    # the final stack: 2 rates x 2 seeds (model m starts from seed m % 2): rate 0 untouched, rate 1 moved; model 3 diverged
    fin = [(W.repeat(2, 1, 1).clone(), b.repeat(2, 1, 1).clone()) for W, b in p0]
    for W, b in fin:
        W[2:] += 0.3 * torch.randn(W[2:].shape, generator=g, dtype=W.dtype)
        b[2:] += 0.3 * torch.randn(b[2:].shape, generator=g, dtype=b.dtype)
    fin[0][0][3, 0, 0] = float("nan")
    x = dl.sample_inputs(6, 3, seed=3)

    def kernel(params, m):
        leaves = [t[m : m + 1].clone().requires_grad_(True) for W, b in params for t in (W, b)]
        rows = []
        for i in range(len(x)):
            out = forward(
                [(leaves[2 * j], leaves[2 * j + 1]) for j in range(len(params))], torch.as_tensor(x[i : i + 1])
            )[0, 0]
            rows.append(torch.cat([gr.reshape(-1) for gr in torch.autograd.grad(out, leaves)]))
        J = torch.stack(rows)
        return (J @ J.T).numpy()

    ch = T.kernel_change(p0, fin, x, 2)
    assert ch[0] == 0.0 and ch[1] == 0.0 and np.isnan(ch[3])
    k0, kt = kernel(p0, 0), kernel(fin, 2)
    assert ch[2] == pytest.approx(np.linalg.norm(kt - k0) / np.linalg.norm(k0), rel=1e-10) and ch[2] > 0.05


@pytest.mark.slow  # minutes of CPU: in the slow set, so that `make test` stays under 10 minutes on 2 cores
def test_trained_net_approaches_its_linearised_model_as_lr_falls_and_width_grows():
    """Full-batch GD to loss 1e-8 at 1.6, 0.9 and 0.3 times the linear stability edge N / lambda_max(Theta_hat).

    Beyond the edge the net leaves the kernel regime (catapult); below it the gap to the linearised
    model's prediction shrinks to a floor set by the width (gradient flow of a finite net is not lazy),
    and that floor is lower for a wider net.
    """
    rng = np.random.default_rng(0)
    N, d = 16, 3
    x, xt = rng.standard_normal((N, d)), rng.standard_normal((200, d))
    y = np.sin(x[:, 0]) * x[:, 1]
    floors = []
    for h in (64, 1024):
        p = init_params(layer_sizes(d, h, 1), np.array([0]), "glorot_uniform", torch.float64)
        G, _, _ = T.empirical_ntk(p, x, x)
        lin, _ = T.linearized_prediction(p, x, y, xt)
        f0 = predict(p, xt)[0]
        frac = np.array([1.6, 0.9, 0.3])
        s = TrainSettings(
            loss=MSE(),
            optimizer=SGD(),
            batch_size=N,
            check_every=50,
            stop=StopRule(threshold=1e-8),
            max_epochs=100000,
            dtype="float64",
            device="cpu",
        )
        r = train(
            x,
            y,
            np.tile(np.arange(N), (3, 1)),
            frac * N / np.linalg.eigvalsh(G)[-1],
            [(W.repeat(3, 1, 1), b.repeat(3, 1, 1)) for W, b in p],
            np.zeros(3, int),
            s,
        )
        assert r.converged.all()
        gap = np.linalg.norm(predict(r.params, xt) - lin, axis=1) / np.linalg.norm(lin - f0)
        assert gap[0] > gap[1] and gap[1] >= gap[2] - 0.01, gap
        floors.append(gap[2])
    assert floors[1] < floors[0] - 0.05, floors


def test_the_large_cholesky_runs_on_one_openblas_thread_and_gives_the_same_fit(monkeypatch):
    """scipy's OpenBLAS 0.3.30 segfaults in dpotrf at N = 20 000 on 2 threads (fine on 1).  From
    ONE_THREAD_CHOLESKY_N rows on the factorisation runs with scipy's pool at one thread, restored after; the fit is the
    same as on one thread throughout.  (The N = 20 000 call itself: the slow set.)"""
    from scipy.linalg import lapack
    from threadpoolctl import ThreadpoolController

    from depthlab.core import kernel_regression as kr

    seen = []
    real = lapack.dpotrf

    def spy(*a, **k):
        libs = ThreadpoolController().select(user_api="blas").lib_controllers
        seen.append({str(c.filepath): c.num_threads for c in libs})
        return real(*a, **k)

    monkeypatch.setattr(kr, "ONE_THREAD_CHOLESKY_N", 300)
    monkeypatch.setattr(lapack, "dpotrf", spy)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((320, 5))
    y, xt = rng.standard_normal(320), rng.standard_normal((40, 5))
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with __import__("threadpoolctl").threadpool_limits(limits=2, user_api="blas"):
            two = kr.kernel_regression(x, y, xt, [1, 2], device="cpu")
            after = {
                str(c.filepath): c.num_threads for c in ThreadpoolController().select(user_api="blas").lib_controllers
            }
    finally:
        torch.set_num_threads(threads)
    scipy_lib = [p for p in seen[0] if "scipy.libs" in p]
    assert scipy_lib and all(s[scipy_lib[0]] == 1 for s in seen), seen
    assert after[scipy_lib[0]] == 2  # restored
    one = kr.kernel_regression(x, y, xt, [1, 2], device="cpu")
    np.testing.assert_allclose(two.prediction, one.prediction, rtol=1e-9, atol=1e-12)


@pytest.mark.slow  # minutes: N = 20 000 as the probe ran it
def test_the_ntk_at_n_20000_on_two_threads_does_not_crash_through_the_public_api(tmp_path):
    """The probe: kernel_regression(x, y, xt, [1, 2, 3], device='cpu') in a plain Python process on 2
    threads, x of 20 000 x 100 on the sphere of radius 10, 1 000 test points: it died in lapack.dpotrf, 2 of 2 tries."""
    import subprocess
    import sys

    code = (
        "import numpy as np, torch\n"
        "from depthlab.core.kernel_regression import kernel_regression\n"
        "torch.set_num_threads(2)\n"
        "r = np.random.default_rng(0)\n"
        "x = r.standard_normal((20000, 100)); x *= 10 / np.linalg.norm(x, axis=1, keepdims=True)\n"
        "t = r.standard_normal((1000, 100)); t *= 10 / np.linalg.norm(t, axis=1, keepdims=True)\n"
        "fit = kernel_regression(x, r.standard_normal(20000), t, [1, 2, 3], device='cpu')\n"
        "print('ok', np.isfinite(fit.prediction).all())\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if not k.endswith("_NUM_THREADS")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=3000, env=env)
    assert p.returncode == 0 and "ok True" in p.stdout, (p.returncode, p.stdout[-2000:], p.stderr[-3000:])
