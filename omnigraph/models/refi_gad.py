r"""REFI-GAD's in-context scorer: a small Transformer over relational fingerprints with an SNR gate.

From *Liu, Liu, Zheng, Liew, Cao, Pan, "REFI-GAD: relational fingerprints and SNR-guided
refinement for generalist graph anomaly detection", ICML 2026 (arXiv 2605.25429)*; the
architecture follows the released code (anomaly-detection spec §5.4).

Given fingerprints (:class:`~omnigraph.models.fingerprint.RelationalFingerprint`) of ``k_n``
normal supports :math:`P_n`, ``k_a`` anomalous supports :math:`P_a` and ``b`` queries :math:`P_q`:

1. tokens :math:`E = [P_n; P_a; P_q] W_{in} + b_{in}` (shared ``Linear(5 -> 64)``, no positional or
   type embedding);
2. :math:`H^1 = \mathrm{TransformerEncoder}(E, M)` (4 post-LN layers, 4 heads, FFN 128, ReLU), where
   the additive mask :math:`M` lets support tokens see only supports and each query see the
   supports and itself, so a query's score never depends on the other queries;
3. SNR gate, from the support set and without gradients steps at test time:

   .. math::
       \mathrm{snr} = \frac{(\mu_a - \mu_{ref})^2}{\sigma^2_{ref} + 10^{-6}}, \qquad
       m = \sigma(\lambda \odot \mathrm{snr} + \beta), \qquad
       H = \mathrm{normalize}_2\big(W'(H^1 \odot m)\big),

   with :math:`\mu_a` the mean of the anomalous supports, :math:`\mu_{ref}, \sigma^2_{ref}` the mean
   and population variance of the reference pool (normal supports and unlabelled queries) and
   per-dimension :math:`\lambda` (init 1), :math:`\beta` (init 0);
4. vote: :math:`\alpha_{ij} = \mathrm{softmax}_j(e^{t} \cos(h_i, h_j))` over the :math:`k_n + k_a`
   supports (:math:`t` learnable, init :math:`\ln(1/0.07)`), and

   .. math::
       \tilde{y}_i = \tfrac12\Big(1 + \sum_{j \in \text{anom}} \alpha_{ij} - \sum_{j \in \text{norm}} \alpha_{ij}\Big)
       \in [0, 1].

About 0.14 M parameters.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from omnigraph.hub import PretrainedMixin

SNR_EPS = 1e-6


def support_query_mask(num_support: int, num_query: int, dtype=torch.float32) -> Tensor:
    """Additive attention mask ``[S+Q, S+Q]``: supports see supports; a query sees supports and itself."""
    size = num_support + num_query
    mask = torch.full((size, size), float("-inf"), dtype=dtype)
    mask[:, :num_support] = 0.0
    idx = torch.arange(num_support, size)
    mask[idx, idx] = 0.0
    return mask


def snr_statistic(h_anomaly: Tensor, mu_ref: Tensor, var_ref: Tensor) -> Tensor:
    r"""Per-dimension :math:`(\mu_a - \mu_{ref})^2 / (\sigma^2_{ref} + 10^{-6})`."""
    return (h_anomaly.mean(0) - mu_ref).pow(2) / (var_ref + SNR_EPS)


def pool_moments(h: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and population variance per dimension of ``h [n, D]``."""
    return h.mean(0), h.var(0, unbiased=False)


class REFIGADNet(nn.Module, PretrainedMixin):
    r"""The REFI-GAD scorer (see the module docstring for the math).

    Args:
        in_dim: fingerprint width (5).
        d_model: token width (64).
        num_heads: attention heads (4).
        num_layers: Transformer encoder layers (4).
        ff_dim: feed-forward width (128).
        dropout: dropout inside the encoder (0.1).
        temperature: initial softmax temperature :math:`\tau`; :math:`t = \ln(1/\tau)` is learned.
        fingerprint: settings of the fingerprint the weights were trained on (stored with the
            checkpoint, applied by the estimator; the network itself only sees ``[*, in_dim]``).
        attention: ``"structured"`` (default) evaluates the masked attention block-wise in
            :math:`O((S+Q)S)`; ``"masked"`` runs ``nn.TransformerEncoder`` with the full
            :math:`(S+Q)^2` additive mask. Both give the same numbers (same parameters).
        orientation: weights ``w [2 * in_dim]`` of the pseudo-anomaly score
            :func:`~omnigraph.models.pseudo_support.oriented_atypicality`, fitted on the source graphs
            at pretraining (stored with the checkpoint, applied by the estimator when a target has no
            labelled anomaly; ``None``: atypicality).

    Shapes:
        ``forward(p_normal [k_n, 5], p_anomaly [k_a, 5], p_query [b, 5]) -> [b]`` scores in [0, 1].
    """

    model_type = "refi-gad"

    def __init__(self, in_dim: int = 5, d_model: int = 64, num_heads: int = 4, num_layers: int = 4,
                 ff_dim: int = 128, dropout: float = 0.1, temperature: float = 0.07,
                 fingerprint: dict | None = None, attention: str = "structured",
                 orientation: list[float] | None = None):
        super().__init__()
        if d_model % num_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by num_heads ({num_heads})")
        self.in_dim, self.d_model, self.num_heads, self.num_layers = in_dim, d_model, num_heads, num_layers
        self.ff_dim, self.dropout, self.temperature = ff_dim, dropout, temperature
        if attention not in ("structured", "masked"):
            raise ValueError(f"attention must be 'structured' or 'masked', got {attention!r}")
        self.attention = attention
        self.fingerprint = dict(fingerprint or {"sim_scale": "edges", "ties": "average"})
        if orientation is not None and len(orientation) != 2 * in_dim:
            raise ValueError(f"orientation must hold {2 * in_dim} weights, got {len(orientation)}")
        self.orientation = None if orientation is None else [float(w) for w in orientation]
        self.embed = nn.Linear(in_dim, d_model)
        layer = nn.TransformerEncoderLayer(d_model, num_heads, dim_feedforward=ff_dim, dropout=dropout,
                                           activation="relu", batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        self.snr_lambda = nn.Parameter(torch.empty(d_model))
        self.snr_beta = nn.Parameter(torch.empty(d_model))
        self.proj = nn.Linear(d_model, d_model, bias=False)  # W'
        self.logit_scale = nn.Parameter(torch.empty(()))     # t, with e^t = 1 / tau
        self.reset_parameters()

    def reset_parameters(self) -> None:
        self.embed.reset_parameters()
        for layer in self.encoder.layers:
            layer.self_attn._reset_parameters()
            for mod in (layer.linear1, layer.linear2, layer.norm1, layer.norm2):
                mod.reset_parameters()
        self.proj.reset_parameters()
        nn.init.ones_(self.snr_lambda)
        nn.init.zeros_(self.snr_beta)
        nn.init.constant_(self.logit_scale, math.log(1.0 / self.temperature))

    def get_config(self) -> dict:
        return {"in_dim": self.in_dim, "d_model": self.d_model, "num_heads": self.num_heads,
                "num_layers": self.num_layers, "ff_dim": self.ff_dim, "dropout": self.dropout,
                "temperature": self.temperature, "fingerprint": self.fingerprint,
                **({"orientation": self.orientation} if self.orientation is not None else {})}

    # -- the four steps -----------------------------------------------------------------------
    def encode(self, p_normal: Tensor, p_anomaly: Tensor, p_query: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Steps 1-2: :math:`H^1` for the normal supports, anomalous supports and queries."""
        k_n, k_a = p_normal.size(0), p_anomaly.size(0)
        tokens = self.embed(torch.cat([p_normal, p_anomaly, p_query], 0))
        if self.attention == "masked":
            mask = support_query_mask(k_n + k_a, p_query.size(0), dtype=tokens.dtype).to(tokens.device)
            h = self.encoder(tokens.unsqueeze(0), mask=mask).squeeze(0)
        else:
            h = torch.cat(self._encode_structured(tokens[:k_n + k_a], tokens[k_n + k_a:]), 0)
        return h[:k_n], h[k_n:k_n + k_a], h[k_n + k_a:]

    def _encode_structured(self, h_s: Tensor, h_q: Tensor) -> tuple[Tensor, Tensor]:
        r"""The masked encoder computed block-wise: :math:`O((S + Q) S)` attention instead of :math:`O((S+Q)^2)`.

        Uses the parameters of ``self.encoder`` and is equal to running it with
        :func:`support_query_mask` (post-LN, ReLU FFN, dropout on the attention weights): supports
        attend to supports only, and each query to the supports and itself.
        """
        heads = self.num_heads
        for layer in self.encoder.layers:
            attn = layer.self_attn
            s, q = h_s.size(0), h_q.size(0)
            qkv = F.linear(torch.cat([h_s, h_q], 0), attn.in_proj_weight, attn.in_proj_bias)
            qh, kh, vh = (t.reshape(s + q, heads, -1).transpose(0, 1) for t in qkv.chunk(3, dim=-1))
            scale = qh.size(-1) ** -0.5
            k_s, v_s = kh[:, :s], vh[:, :s]
            logit_ss = qh[:, :s] @ k_s.transpose(1, 2) * scale                     # [H, S, S]
            logit_qs = qh[:, s:] @ k_s.transpose(1, 2) * scale                     # [H, Q, S]
            logit_qq = (qh[:, s:] * kh[:, s:]).sum(-1, keepdim=True) * scale       # [H, Q, 1]
            a_ss = F.dropout(torch.softmax(logit_ss, -1), attn.dropout, self.training)
            a_q = F.dropout(torch.softmax(torch.cat([logit_qs, logit_qq], -1), -1), attn.dropout, self.training)
            out_s = a_ss @ v_s
            out_q = a_q[..., :s] @ v_s + a_q[..., s:] * vh[:, s:]
            out = torch.cat([out_s, out_q], 1).transpose(0, 1).reshape(s + q, -1)
            x = torch.cat([h_s, h_q], 0)
            x = layer.norm1(x + layer.dropout1(attn.out_proj(out)))
            x = layer.norm2(x + layer.dropout2(layer.linear2(layer.dropout(layer.activation(layer.linear1(x))))))
            h_s, h_q = x[:s], x[s:]
        return h_s, h_q

    def gate(self, snr: Tensor) -> Tensor:
        r"""Step 3: :math:`m = \sigma(\lambda \odot \mathrm{snr} + \beta)`."""
        return torch.sigmoid(self.snr_lambda * snr + self.snr_beta)

    def refine(self, h: Tensor, m: Tensor) -> Tensor:
        """Step 3: :math:`\\mathrm{normalize}(W'(h \\odot m))`."""
        return F.normalize(self.proj(h * m), dim=-1)

    def vote(self, z_normal: Tensor, z_anomaly: Tensor, z_query: Tensor) -> Tensor:
        """Step 4: temperature-softmax cosine vote over the supports; returns scores in [0, 1]."""
        z_support = torch.cat([z_normal, z_anomaly], 0)
        alpha = torch.softmax(z_query @ z_support.T * self.logit_scale.exp(), dim=-1)
        k_n = z_normal.size(0)
        return 0.5 * (1.0 + alpha[:, k_n:].sum(-1) - alpha[:, :k_n].sum(-1))

    def forward(self, p_normal: Tensor, p_anomaly: Tensor, p_query: Tensor,
                ref_moments: tuple[Tensor, Tensor] | None = None) -> Tensor:
        """Score one episode; the SNR reference pool is [normal supports; these queries] unless given."""
        _check_tokens(p_normal, p_anomaly, p_query, self.in_dim)
        h_n, h_a, h_q = self.encode(p_normal, p_anomaly, p_query)
        mu_ref, var_ref = ref_moments if ref_moments is not None else pool_moments(torch.cat([h_n, h_q], 0))
        m = self.gate(snr_statistic(h_a, mu_ref, var_ref))
        return self.vote(self.refine(h_n, m), self.refine(h_a, m), self.refine(h_q, m))

    @torch.no_grad()
    def score_nodes(self, p_normal: Tensor, p_anomaly: Tensor, p_query: Tensor, chunk_size: int = 512,
                    snr_pool: str = "global", pool_mask: Tensor | None = None) -> Tensor:
        """Inference over many queries in chunks (eval mode is the caller's job).

        ``snr_pool="global"``: :math:`\\mu_{ref}, \\sigma^2_{ref}` over the normal supports plus the
        queries selected by ``pool_mask`` (default: all), computed once, so scores do not depend on
        node order or ``chunk_size``. ``"batch"``: the release's per-chunk pool.
        """
        if snr_pool not in ("global", "batch"):
            raise ValueError(f"snr_pool must be 'global' or 'batch', got {snr_pool!r}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        _check_tokens(p_normal, p_anomaly, p_query, self.in_dim)
        if p_query.size(0) == 0:
            return p_query.new_zeros(0)
        if snr_pool == "batch":
            return torch.cat([self(p_normal, p_anomaly, p_query[s:s + chunk_size])
                              for s in range(0, p_query.size(0), chunk_size)])
        # supports never see the queries, so their encodings are the same in every chunk
        h_q = []
        for s in range(0, p_query.size(0), chunk_size):
            h_n, h_a, h = self.encode(p_normal, p_anomaly, p_query[s:s + chunk_size])
            h_q.append(h)
        h_q = torch.cat(h_q)
        pool = h_q if pool_mask is None else h_q[pool_mask]
        m = self.gate(snr_statistic(h_a, *pool_moments(torch.cat([h_n, pool], 0))))
        return self.vote(self.refine(h_n, m), self.refine(h_a, m), self.refine(h_q, m))

    @staticmethod
    def loss(score: Tensor, y: Tensor, pos_weight: float = 4.0, legacy_logit_bce: bool = False,
             eps: float = 1e-6) -> Tensor:
        r"""Episode loss. Default: weighted BCE on :math:`\tilde{y}` clamped to :math:`[\epsilon, 1-\epsilon]`
        (anomalies weighted by ``pos_weight``). ``legacy_logit_bce=True`` reproduces the release's
        ``BCEWithLogitsLoss(pos_weight)`` applied to the probability :math:`\tilde{y}`."""
        y = y.to(score.dtype)
        if legacy_logit_bce:
            return F.binary_cross_entropy_with_logits(score, y, pos_weight=score.new_tensor(pos_weight))
        weight = 1.0 + (pos_weight - 1.0) * y
        return F.binary_cross_entropy(score.clamp(eps, 1 - eps), y, weight=weight)


def _check_tokens(p_normal: Tensor, p_anomaly: Tensor, p_query: Tensor, in_dim: int) -> None:
    for name, p in (("p_normal", p_normal), ("p_anomaly", p_anomaly), ("p_query", p_query)):
        if p.dim() != 2 or p.size(1) != in_dim:
            raise ValueError(f"{name} must have shape [n, {in_dim}], got {list(p.shape)}")
    if p_normal.size(0) == 0 or p_anomaly.size(0) == 0:
        raise ValueError("REFI-GAD needs at least one normal and one anomalous support node")


__all__ = ["REFIGADNet", "pool_moments", "snr_statistic", "support_query_mask"]
