#!/usr/bin/python3
"""Prints the coefficients of core/common/packet_exp.h's polynomial: q(r) ≈ (exp(r) − 1)/r on
[−ln2/2, ln2/2], a Chebyshev fit (mpmath's chebyfit, 50 digits) of degree 5 for float and 10 for double, highest
degree first, with the fit's error. exp(r) is then 1 + r·q(r), so exp(0) is exactly 1.

    /usr/bin/python3 scripts/exp_polynomial.py     # needs python3-mpmath (apt)
"""
import mpmath as mp

mp.mp.dps = 50
half_ln2 = mp.log(2) / 2


def q(r):
    return mp.expm1(r) / r if r != 0 else mp.mpf(1)


for name, coefficients in (("float", 6), ("double", 11)):
    fit, error = mp.chebyfit(q, [-half_ln2, half_ln2], coefficients, error=True)
    print(f"{name}: degree {coefficients - 1}, max |q - fit| = {mp.nstr(error, 3)} "
          f"(relative error of exp(r) at most {mp.nstr(error * half_ln2 / mp.exp(-half_ln2), 3)})")
    suffix = "f" if name == "float" else ""
    print("  {" + ", ".join(repr(float(c)) + suffix for c in fit) + "}")
