"""Independent PyTorch reference for fitting a compiled ASAP layer (docs/operators/asap.md#fitting).

Written from the mathematics in the docs, never from the C++ sources:

  example m    one head instance: q, k (n × d), the teacher's closure-ready source dual u (score coordinates),
               optional mask; under subsequence the padded tokens are dropped first
  features     Φ_m from asap_reference.sliced_features (valid queries against valid keys, convex extension for
               padded queries under keep-queries)
  target       f̄_m = (u + a) − mean over valid rows, a_i = ‖q_i‖²/(2√d)   (cost coordinates)
  LS           β = argmin (1/R) Σ_m Σ_{valid i} ((Φ_m β)_i − f̄_{m,i})² + λ_B ‖β‖²,  R = number of stacked rows,
               solved here as least squares on the augmented rows [Φ; √(R λ_B) I] β ≈ [f̄; 0] (torch.linalg.lstsq)
  KL           J(β) = (1/N) Σ_m [ eps Σ_{j∈J} ν_j LSE_i((S_ij + (Φβ)_i − a_i)/eps) − ⟨r_m, Φ_m β⟩ ] + (λ_B/2)‖β‖²
               with r_m = row sums of P(u, K(u)) (transport scale); minimised by Newton on autograd's gradient
               and Hessian until ‖∇J‖ < 1e-13
  quality      R² = 1 − Σ(Φβ − f̄)²/Σ f̄², δ = max |Φβ − f̄| over valid rows
"""
import math

import torch

import asap_reference as asap
import attention_reference as ref


def prepare(q, k, u, mask, slices, eps, mask_mode):
    """(s, a, phi, valid rows, log_nu, r) of one example."""
    if mask is not None and mask_mode == "subsequence":
        q, k, u, mask = q[mask], k[mask], u[mask], None
    n, d = q.shape
    s = ref.scores(q, k)
    a = (q * q).sum(1) / (2 * math.sqrt(d))
    valid = torch.ones(n, dtype=torch.bool) if mask is None else mask
    phi = asap.sliced_features(q, k, slices, mask)
    cost = u + a
    target = torch.where(valid, cost - cost[valid].mean(), torch.zeros_like(cost))
    log_nu = torch.full((n,), -math.log(n))
    log_nu[~valid] = float("-inf")
    v = asap.key_closure(s, u, log_nu, eps)
    r = ref.transport_plan(s, u, v, eps).sum(1)
    return dict(s=s, a=a, phi=phi, valid=valid, target=target, log_nu=log_nu, r=r, eps=eps)


def fit_examples(instances, slices, eps, mask_mode):
    """instances: (q, k, u, mask or None) per head instance."""
    return [prepare(q, k, u, m, slices, eps, mask_mode) for q, k, u, m in instances]


def fit_ls(examples, lambda_b):
    rows = [e["phi"][e["valid"]] for e in examples]
    targets = [e["target"][e["valid"]] for e in examples]
    big_phi, y = torch.cat(rows), torch.cat(targets)
    n_rows, n_slices = big_phi.shape
    augmented = torch.cat([big_phi, math.sqrt(n_rows * lambda_b) * torch.eye(n_slices)])
    rhs = torch.cat([y, torch.zeros(n_slices)])
    return torch.linalg.lstsq(augmented, rhs[:, None], driver="gelsd").solution[:, 0], n_rows


def kl_objective(examples, beta, lambda_b):
    total = 0.0
    for e in examples:
        fitted = e["phi"] @ beta
        active = torch.isfinite(e["log_nu"])
        lse = torch.logsumexp((e["s"][:, active] + (fitted - e["a"])[:, None]) / e["eps"], dim=0)
        total = total + e["eps"] * (torch.exp(e["log_nu"][active]) * lse).sum() - e["r"] @ fitted
    return total / len(examples) + 0.5 * lambda_b * beta @ beta


def fit_kl(examples, start, lambda_b):
    beta = start.clone()
    for _ in range(100):
        b = beta.clone().requires_grad_(True)
        grad = torch.autograd.grad(kl_objective(examples, b, lambda_b), b)[0]
        if grad.norm() < 1e-13:
            break
        hess = torch.autograd.functional.hessian(lambda x: kl_objective(examples, x, lambda_b), beta)
        step = torch.linalg.solve(hess, -grad)
        value = kl_objective(examples, beta, lambda_b)
        t = 1.0
        while kl_objective(examples, beta + t * step, lambda_b) > value + 1e-4 * t * (grad @ step) + 1e-15 and t > 1e-10:
            t /= 2
        beta = beta + t * step
    return beta


def quality(examples, beta):
    residual = total = delta = 0.0
    for e in examples:
        err = (e["phi"] @ beta - e["target"])[e["valid"]]
        residual += float((err ** 2).sum())
        total += float((e["target"] ** 2).sum())
        delta = max(delta, float(err.abs().max()))
    return 1 - residual / total, delta
