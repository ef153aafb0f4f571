#!/usr/bin/env python3
"""How far greedy decoding's logprobs move between batch sizes in bf16: the figure the quality
check at load needs for its tolerance (docs/quality-gate.md, Quality at load).

Run on a GPU machine from the repository root (torch with CUDA; nothing else):

    python3 tests/device/batch_variance.py [--sizes 8 24 48] [--prompts 48] [--tokens 24]

A small decoder (random weights, always the same ones; RMSNorm, causal attention, SwiGLU MLP, tied
embeddings) in bf16 decodes the same prompts greedily, each alone and then in batches, the way
the check does, with a KV cache (every decode step is a GEMM of M = batch size, the shape that
changes the kernel's reduction). Per batch size it prints what the check compares: generations
equal to their run alone, the largest and the median |d logprob| of the tokens both decoded alike,
and at each first divergence how far under the top token alone the batched pick was (the
near-tie margin). Set the profile's sglang_verify_quality_load_tolerance a few times above the
largest figures seen. It is torch's GEMMs on one GPU, not SGLang's kernels: a lower bound of the
batch variance of a real server, which the check on the hosts then shows (report.json,
quality.load.per_size).
"""

import argparse
import statistics

import torch


def build(vocab, hidden, layers, heads, device, generator_seed=0):
    g = torch.Generator().manual_seed(generator_seed)

    def w(*shape, scale=None):
        t = torch.randn(*shape, generator=g) * (scale or shape[-1] ** -0.5)
        return t.to(device=device, dtype=torch.bfloat16)

    # a peaked output distribution (a trained model's is; random weights give near-ties everywhere)
    model = {"emb": w(vocab, hidden, scale=1.0), "layers": [], "heads": heads}
    for _ in range(layers):
        model["layers"].append({"qkv": w(3 * hidden, hidden), "o": w(hidden, hidden),
                                "up": w(4 * hidden, hidden), "gate": w(4 * hidden, hidden), "down": w(hidden, 4 * hidden)})
    return model


def rms(x):
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype)


def forward(model, ids, cache):
    """Logits of the last position of each row; ``cache``: per layer (k, v) of the rows so far."""
    x = model["emb"][ids]
    b, t, d = x.shape
    h = model["heads"]
    for i, layer in enumerate(model["layers"]):
        q, k, v = (rms(x) @ layer["qkv"].T).split(d, dim=-1)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        if cache[i] is not None:
            k, v = torch.cat([cache[i][0], k], 2), torch.cat([cache[i][1], v], 2)
        cache[i] = (k, v)
        a = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=cache[i][0].shape[2] == t)
        x = x + a.transpose(1, 2).reshape(b, t, d) @ layer["o"].T
        y = rms(x)
        x = x + (torch.nn.functional.silu(y @ layer["gate"].T) * (y @ layer["up"].T)) @ layer["down"].T
    return (rms(x[:, -1]) @ model["emb"].T).float() * 8.0


def decode(model, prompts, tokens):
    """Greedy continuations of ``prompts`` (a [batch, len] tensor) decoded together: per row the
    ids, their logprobs and the full logprob rows."""
    cache = [None] * len(model["layers"])
    ids, rows = prompts, []
    for _ in range(tokens):
        lp = torch.log_softmax(forward(model, ids, cache), -1)
        nxt = lp.argmax(-1)
        rows.append(lp)
        ids = nxt[:, None]
    lps = torch.stack(rows, 1)  # [batch, tokens, vocab]
    out = lps.argmax(-1)
    return out.cpu(), lps.gather(-1, out[..., None])[..., 0].cpu(), lps.cpu()


def compare(alone, batched):
    """(exact, deltas of the shared prefix, margin at the first divergence or None)."""
    a_ids, a_lp, a_all = alone
    b_ids, b_lp, _ = batched
    deltas = []
    for i in range(len(a_ids)):
        if a_ids[i] != b_ids[i]:
            return False, deltas, float(a_lp[i] - a_all[i, b_ids[i]])
        deltas.append(abs(float(b_lp[i] - a_lp[i])))
    return True, deltas, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[8, 24, 48])
    ap.add_argument("--prompts", type=int, default=48)
    ap.add_argument("--prompt-len", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=24)
    ap.add_argument("--hidden", type=int, default=2048)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.manual_seed(0)
    model = build(args.vocab, args.hidden, args.layers, 16, args.device)
    prompts = torch.randint(0, args.vocab, (args.prompts, args.prompt_len), device=args.device)
    print("device %s (%s), torch %s, bf16, hidden %d, %d layers, %d prompts x %d tokens" % (
        args.device, torch.cuda.get_device_name() if args.device == "cuda" else "cpu", torch.__version__,
        args.hidden, args.layers, args.prompts, args.tokens))
    with torch.inference_mode():
        alone = []
        for p in prompts:
            ids, lp, lps = decode(model, p[None], args.tokens)
            alone.append((ids[0], lp[0], lps[0]))
        for size in args.sizes:
            exact, deltas, margins = 0, [], []
            for start in range(0, args.prompts, size):
                ids, lp, lps = decode(model, prompts[start:start + size], args.tokens)
                for j in range(ids.shape[0]):
                    same, d, margin = compare(alone[start + j], (ids[j], lp[j], lps[j]))
                    exact += same
                    deltas += d
                    if margin is not None:
                        margins.append(margin)
            print("batch %3d: %d/%d generations as alone; |d logprob| of shared tokens max %.4g, median %.3g; "
                  "divergence margins %s" % (size, exact, args.prompts, max(deltas or [0.0]),
                                              statistics.median(deltas or [0.0]),
                                              ", ".join("%.4g" % m for m in sorted(margins)) or "none"))


if __name__ == "__main__":
    main()
