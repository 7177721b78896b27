"""Fits the polynomials of core/scalar_ops.h's erf_f32, tanh_f32 and expf_inline; prints their float coefficients.

erf_f32(x) is x + x * P(x^2) for |x| < 0.875 (P of degree 5) and, above,
sign(x) * (1 - exp(-x^2) * Q(|x|)) with Q of degree 12 in (|x| - 2.4375) on [0.875, 4].
Each fit is a least-squares fit to *relative* error on 3000 Chebyshev nodes, against
mpmath's erf/erfc at 30 digits, then rounded to float (the printed hex literals).
expf_inline's e^r = 1 + r + r^2 * R(r), R of degree 4 on [-ln2/2, ln2/2], and tanh_f32's
tanh(x) = x + x^3 * T(x^2), T of degree 9 on |x| < 1.25, are fitted the same way.
The accuracy of the results (at most 1.06 ULP for erf, 1.51 for tanh, over every float) is
checked by tests/backend/scalar_ops_test.cpp (ScalarOps.InlineErfAndTanh..., a strided sweep;
LAZYTRAIN_SWEEP_STRIDE=1 sweeps every float).

    python tools/fit_inline_functions.py   # needs numpy and mpmath (bench/setup_peers.sh's venv has both)
"""
import mpmath
import numpy as np

mpmath.mp.dps = 30
SPLIT, TOP, CENTER, NODES = 0.875, 4.0, 2.4375, 3000


def fit(x, target, basis_var, degree, rhs):
    vander = np.vander(basis_var, degree + 1, increasing=True)
    coeffs = np.linalg.lstsq(vander / target[:, None], rhs, rcond=None)[0]
    return coeffs.astype(np.float32)


def chebyshev(lo, hi):
    k = np.arange(NODES)
    return lo + (hi - lo) / 2 * (1 + np.cos(np.pi * (k + 0.5) / NODES))


def main():
    # erf(x)/x = 1 + P(t), t = x^2: fit P to the relative error of erf(x)/x.
    t = chebyshev(0.0, SPLIT * SPLIT)
    x = np.sqrt(t)
    ratio = np.array([float(mpmath.erf(v)) for v in x]) / x
    p = fit(x, ratio, t, 5, (ratio - 1) / ratio)
    # erfc(x) * exp(x^2) = Q(x - CENTER) on [SPLIT, TOP].
    x = chebyshev(SPLIT, TOP)
    scaled = np.array([float(mpmath.erfc(v) * mpmath.exp(v * v)) for v in x])
    q = fit(x, scaled, x - CENTER, 12, np.ones_like(scaled))
    # e^r = 1 + r + r^2 R(r): fit R to the relative error of e^r.
    r = chebyshev(-np.log(2) / 2, np.log(2) / 2)
    e = np.exp(r)
    vander = np.vander(r, 5, increasing=True)
    weight = r**2 / e
    rr = np.linalg.lstsq(vander * weight[:, None], (e - 1 - r) / r**2 * weight, rcond=None)[0].astype(np.float32)
    print("R (r^0 first):", ", ".join(float(c).hex() + "f" for c in rr))
    # tanh(x)/x = 1 + t T(t), t = x^2: fit T to the relative error of tanh(x)/x.
    t = chebyshev(0.0, 1.25 * 1.25)
    x = np.sqrt(t)
    ratio = np.array([float(mpmath.tanh(v)) for v in x]) / x
    vander = np.vander(t, 10, increasing=True) * t[:, None]
    tt = np.linalg.lstsq(vander / ratio[:, None], (ratio - 1) / ratio, rcond=None)[0].astype(np.float32)
    print("T (t^0 first):", ", ".join(float(c).hex() + "f" for c in tt))
    print("P (x^0 first):", ", ".join(float(c).hex() + "f" for c in p))
    print("Q (u^0 first):", ", ".join(float(c).hex() + "f" for c in q))


if __name__ == "__main__":
    main()
