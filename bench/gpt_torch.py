#!/usr/bin/env python3
"""PyTorch reference for tapevm's character GPT (issue 20, item 8): the same model, the same
initialisation and the same batches, trained in f32 (TF32 off), fp16 autocast + GradScaler, or
bf16 autocast; writes per-step losses, validation losses, tokens/s and peak memory as JSON.

Needs only torch and numpy; the `safetensors` package is used when installed (to prove tapevm's
files load with it, and to write PyTorch's checkpoint with it), else the format is read and
written here with numpy.

The model is tapevm's GPT (src/nn/train/tapevm/nn/gpt.hpp) with the same module names, so a
parameter's PyTorch name *is* its tapevm name (TAPEVM_NAME below is the one place that says so):
  wte.weight [vocab][dim], wpe.weight [context][dim]
  blocks.<i>.ln_1.{weight,bias}, blocks.<i>.attn.{q,k,v,proj}.{weight,bias},
  blocks.<i>.ln_2.{weight,bias}, blocks.<i>.mlp.{fc,proj}.{weight,bias}
  ln_f.{weight,bias}, lm_head.weight (absent when tied to wte.weight)
Linear weights are [out][in] as torch.nn.Linear's. Pre-norm blocks (x + attn(ln_1(x)), then
h + mlp(ln_2(h))), LayerNorm eps 1e-5 (RMSNorm eps 1e-6), GELU in its tanh form, causal
attention scaled by 1/sqrt(head_dim), grouped-query heads repeated in groups, no dropout (nanoGPT's
shakespeare_char uses 0.2; parity needs none). Bias, tying, norm, activation and sizes come from
the init file's metadata ("gpt.*" keys, as tapevm's gpt_config_metadata writes them); without an
init file, from the flags (defaults: nanoGPT's shakespeare_char sizes with tapevm's GPTConfig
defaults: biases on, head tied).

Training as `tapevm train char-gpt`: AdamW (betas 0.9/0.99, eps 1e-8, weight decay 0.1 on
parameters of rank >= 2 only), lr warm-up (lr (s+1)/(warmup+1)) then cosine to min_lr at the
last step, global-norm clipping at 1, mean cross-entropy over all tokens.

Batches, one of:
  --batches FILE   safetensors with i32 `inputs` and `targets` [N][B][T] (step s uses s mod N)
                   and optionally `val_inputs`/`val_targets` [M][B][T] (validation batch j is
                   j mod M), as `tapevm train char-gpt --batches-out` (nn::save_token_batches)
                   writes it;
  --data CORPUS    draws them exactly as `tapevm train char-gpt --data CORPUS --seed S` does
                   (tapevm's TextDataset: bytes, sorted vocabulary, last --val-fraction for
                   validation, windows from its counter-based RNG; --seed defaults to 1 as there);
  neither          uniform random tokens (speed only).
Each evaluation (--eval-interval) averages validation batches 0 .. --eval-iters - 1, the same
ones every time, as tapevm's Trainer::evaluate (char-gpt's --eval-batches, 8 by default).

examples (GPU machine; bench/nn_parity.sh runs the first against tapevm):
  python3 bench/gpt_torch.py --init init.safetensors --batches batches.safetensors --steps 20 \\
      --precision f32 --json torch_f32.json --log torch_f32.jsonl --compare tapevm_final.safetensors
  python3 bench/gpt_torch.py --data kjv.txt --steps 5000 --precision bf16 --log torch.jsonl
  python3 bench/gpt_torch.py --steps 50 --precision fp16   # speed only: random init and tokens
  python3 bench/gpt_torch.py --self-test                    # format and RNG checks, no GPU needed
"""
import time

_PROCESS_START = time.perf_counter()  # before torch's import, which is most of a cold start

import argparse  # noqa: E402
import json
import math  # noqa: E402
import pathlib  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

try:
    import safetensors.torch as st_torch
except ImportError:  # the numpy reader and writer below do the work
    st_torch = None


def TAPEVM_NAME(torch_name):
    """The tapevm parameter name of a PyTorch state_dict key: the same (the modules below are
    named as tapevm's)."""
    return torch_name


# ---- safetensors with numpy -----------------------------------------------------------------

_NUMPY = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "BF16": np.uint16, "I32": np.int32,
          "I64": np.int64, "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}
_TORCH = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
          torch.int32: "I32", torch.int64: "I64"}
_WRITE_RANK = {"F64": 5, "I64": 4, "F32": 3, "I32": 2, "BF16": 1, "F16": 0}


def read_safetensors(path):
    """(tensors by name as CPU torch tensors, metadata), with the format's checks."""
    data = pathlib.Path(path).read_bytes()
    if len(data) < 8:
        raise ValueError(f"{path}: shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", data[:8])
    if length > 100_000_000 or 8 + length > len(data):
        raise ValueError(f"{path}: header length {length} is out of range")

    def no_duplicates(pairs):
        keys = [k for k, _ in pairs]
        if len(keys) != len(set(keys)):
            raise ValueError(f"{path}: duplicate key in the header")
        return dict(pairs)

    header = json.loads(data[8:8 + length].decode("utf-8"), object_pairs_hook=no_duplicates)
    metadata = header.pop("__metadata__", {})
    body = memoryview(data)[8 + length:]
    tensors, covered = {}, 0
    for name, info in sorted(header.items(), key=lambda item: tuple(item[1]["data_offsets"])):
        begin, end = info["data_offsets"]
        if begin != covered:
            raise ValueError(f"{path}: tensor {name}: offsets leave a gap or overlap")
        dtype = _NUMPY[info["dtype"]]
        count = math.prod(info["shape"])
        if end - begin != count * np.dtype(dtype).itemsize or end > len(body):
            raise ValueError(f"{path}: tensor {name}: byte count disagrees with dtype and shape")
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(info["shape"]).copy()
        if info["dtype"] == "BF16":  # numpy has no bfloat16: its bits, through int16
            tensor = torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
        else:
            tensor = torch.from_numpy(array)
        tensors[name] = tensor
        covered = end
    if covered != len(body):
        raise ValueError(f"{path}: bytes after the last tensor")
    return tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """tapevm's layout (and the Python package's): header padded to 8 bytes, __metadata__ first,
    data ordered by dtype then name."""
    items = sorted(tensors.items(), key=lambda item: (-_WRITE_RANK[_TORCH[item[1].dtype]], item[0]))
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = dict(metadata)
    for name, tensor in items:
        tensor = tensor.detach().cpu().contiguous()
        raw = (tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor).numpy().tobytes()
        header[name] = {"dtype": _TORCH[tensor.dtype], "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text)
        for raw in blobs:
            out.write(raw)


def load_checkpoint(path):
    """Reads with the safetensors package when installed and checks it against the numpy reader."""
    tensors, metadata = read_safetensors(path)
    if st_torch is not None:
        official = st_torch.load_file(str(path))
        assert official.keys() == tensors.keys(), "safetensors package and numpy reader disagree on keys"
        for name, tensor in tensors.items():
            assert torch.equal(official[name], tensor), f"safetensors package reads {name} differently"
    return tensors, metadata


# ---- tapevm's counter-based RNG and TextDataset (src/nn/io/data.cpp) -------------------------

_MASK = (1 << 64) - 1
_WINDOW_STREAM = {"train": 0x5452_4149_4E00_0000, "validation": 0x5641_4C49_4400_0000}


def _mix(x):
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def random_bits(seed, stream, counter):
    return _mix(_mix(_mix(seed) ^ stream) ^ counter)


def random_below(bits, bound):
    return (bits * bound) >> 64


class TextBatches:
    """tapevm's TextDataset: batch `index` of a split is a pure function of (seed, split, index)."""

    def __init__(self, path, context, batch, val_fraction, seed):
        data = pathlib.Path(path).read_bytes()
        if not data:
            sys.exit(f"gpt_torch: {path} is empty")
        self.symbols = sorted(set(data))
        lookup = np.zeros(256, dtype=np.int32)
        lookup[self.symbols] = np.arange(len(self.symbols), dtype=np.int32)
        tokens = lookup[np.frombuffer(data, dtype=np.uint8)]
        validation = math.floor(len(tokens) * val_fraction)
        self.splits = {"train": tokens[:len(tokens) - validation], "validation": tokens[len(tokens) - validation:]}
        self.context, self.batch, self.seed = context, batch, seed

    def batch_at(self, split, index):
        tokens = self.splits[split]
        windows = len(tokens) - self.context
        starts = [random_below(random_bits(self.seed, _WINDOW_STREAM[split], index * self.batch + b), windows)
                  for b in range(self.batch)]
        rows = np.stack([tokens[s:s + self.context + 1] for s in starts])
        return torch.from_numpy(rows[:, :-1].copy()), torch.from_numpy(rows[:, 1:].copy())


# ---- the model --------------------------------------------------------------------------------

class Norm(nn.Module):
    def __init__(self, dim, bias, rms):
        super().__init__()
        self.rms = rms
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias and not rms else None

    def forward(self, x):
        if self.rms:
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * self.weight
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, 1e-5)


ACTIVATIONS = {"gelu": lambda x: F.gelu(x, approximate="tanh"), "relu": F.relu, "silu": F.silu, "tanh": torch.tanh}


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = c["heads"], c["kv_heads"], c["dim"] // c["heads"]
        self.q = nn.Linear(c["dim"], self.heads * self.head_dim, bias=c["bias"])
        self.k = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=c["bias"])
        self.v = nn.Linear(c["dim"], self.kv_heads * self.head_dim, bias=c["bias"])
        self.proj = nn.Linear(self.heads * self.head_dim, c["dim"], bias=c["bias"])

    def forward(self, x):
        b, t, _ = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.kv_heads != self.heads:  # query head h reads kv head h // (heads / kv_heads)
            k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
            v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, self.heads * self.head_dim))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.fc = nn.Linear(c["dim"], c["mlp_hidden"], bias=c["bias"])
        self.proj = nn.Linear(c["mlp_hidden"], c["dim"], bias=c["bias"])
        self.activation = ACTIVATIONS[c["activation"]]

    def forward(self, x):
        return self.proj(self.activation(self.fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = Norm(c["dim"], c["bias"], c["rms_norm"])
        self.attn = Attention(c)
        self.ln_2 = Norm(c["dim"], c["bias"], c["rms_norm"])
        self.mlp = MLP(c)

    def forward(self, x):
        h = x + self.attn(self.ln_1(x))
        return h + self.mlp(self.ln_2(h))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab"], c["dim"])
        self.wpe = nn.Embedding(c["context"], c["dim"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["layers"]))
        self.ln_f = Norm(c["dim"], c["bias"], c["rms_norm"])
        self.lm_head = None if c["tie_weights"] else nn.Linear(c["dim"], c["vocab"], bias=False)
        residual = 0.02 / math.sqrt(2 * max(c["layers"], 1))
        for name, p in self.named_parameters():  # GPT-2's recipe, as tapevm's init_weights
            if ".ln_" in "." + name:
                nn.init.constant_(p, 1.0 if name.endswith(".weight") else 0.0)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, 0.0, residual if name.endswith(("attn.proj.weight", "mlp.proj.weight")) else 0.02)

    def forward(self, ids, targets):
        t = ids.shape[1]
        x = self.wte(ids.long()) + self.wpe(torch.arange(t, device=ids.device))
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        logits = x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.reshape(-1).long())


def config_from(metadata, args):
    """The model configuration: the init file's gpt.* metadata when present, else the flags."""
    c = {"vocab": args.vocab, "context": args.context, "layers": args.layers, "heads": args.heads,
         "kv_heads": args.kv_heads or args.heads, "dim": args.dim, "mlp_hidden": 4 * args.dim,
         "bias": not args.no_bias, "rms_norm": False, "tie_weights": not args.untied, "activation": "gelu"}
    for key in c:
        text = metadata.get("gpt." + key)
        if text is not None:
            c[key] = text if key == "activation" else (int(text) != 0 if key in ("bias", "rms_norm", "tie_weights")
                                                      else int(text))
    return c


# ---- training ---------------------------------------------------------------------------------

def lr_at(step, args):
    if step < args.warmup:
        return args.lr * (step + 1) / (args.warmup + 1)
    total = args.schedule_steps or args.steps
    if step >= total:
        return args.min_lr
    progress = (step - args.warmup) / max(total - args.warmup, 1)
    return args.min_lr + 0.5 * (1 + math.cos(math.pi * progress)) * (args.lr - args.min_lr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--init", type=pathlib.Path, help="tapevm's initial parameters (safetensors)")
    parser.add_argument("--batches", type=pathlib.Path, help="batches file (safetensors, see above)")
    parser.add_argument("--data", type=pathlib.Path, help="text corpus, drawn as tapevm's TextDataset")
    parser.add_argument("--val-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1, help="TextDataset seed (--data), as char-gpt's --seed")
    parser.add_argument("--precision", choices=["f32", "fp16", "bf16"], default="f32")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--threads", type=int, help="CPU threads (torch.set_num_threads)")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--context", type=int, default=256)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--heads", type=int, default=6)
    parser.add_argument("--kv-heads", type=int, default=0)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--vocab", type=int, default=65)
    parser.add_argument("--no-bias", action="store_true")
    parser.add_argument("--untied", action="store_true")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--min-lr", type=float, help="default lr / 10")
    parser.add_argument("--warmup", type=int, help="default min(100, schedule steps / 10)")
    parser.add_argument("--schedule-steps", type=int, help="the cosine schedule's length (default --steps)")
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--beta2", type=float, default=0.99)
    parser.add_argument("--clip", type=float, default=1.0)
    parser.add_argument("--eval-interval", type=int, default=0, help="steps between validations (0: none)")
    parser.add_argument("--eval-iters", type=int, default=8,
                        help="validation batches 0 .. N-1 per evaluation (char-gpt's --eval-batches)")
    parser.add_argument("--warmup-timing", type=int, default=5, help="steps left out of tokens/s")
    parser.add_argument("--json", type=pathlib.Path, help="results file (default: stdout)")
    parser.add_argument("--log", type=pathlib.Path, help="JSON-lines log as tapevm writes it (plot_loss.py)")
    parser.add_argument("--save", type=pathlib.Path, help="final parameters (safetensors) for tapevm to load")
    parser.add_argument("--compare", type=pathlib.Path,
                        help="tapevm's parameters after the same steps: report the largest relative difference")
    parser.add_argument("--self-test", action="store_true", help="check the format code and RNG, then exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    args.min_lr = args.lr / 10 if args.min_lr is None else args.min_lr
    args.warmup = min(100, (args.schedule_steps or args.steps) // 10) if args.warmup is None else args.warmup
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False  # f32 means f32
    torch.backends.cudnn.allow_tf32 = False
    started = time.perf_counter()

    metadata, initial = {}, None
    if args.init:
        initial, metadata = load_checkpoint(args.init)
    source = None
    if args.batches:
        batches, batches_meta = load_checkpoint(args.batches)
        source = "batches"
        args.batch, args.context = batches["inputs"].shape[1], batches["inputs"].shape[2]
        if "gpt.vocab" not in metadata and "vocab" in batches_meta:
            args.vocab = int(batches_meta["vocab"])
    elif args.data:
        text = TextBatches(args.data, args.context, args.batch, args.val_fraction, args.seed)
        source = "data"
        if "gpt.vocab" not in metadata:
            args.vocab = len(text.symbols)
    c = config_from(metadata, args)
    if args.context > c["context"]:
        sys.exit(f"gpt_torch: batches of {args.context} tokens exceed the model's context {c['context']}")

    torch.manual_seed(1337)
    model = GPT(c)
    if initial is not None:
        expected = {TAPEVM_NAME(name) for name in model.state_dict()}
        if expected != set(initial):
            sys.exit(f"gpt_torch: {args.init} does not match the model: missing "
                     f"{sorted(expected - set(initial))[:5]}, unexpected {sorted(set(initial) - expected)[:5]}")
        model.load_state_dict({name: initial[TAPEVM_NAME(name)].float() for name in model.state_dict()})
    model.to(device)

    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=args.lr, betas=(0.9, args.beta2), eps=1e-8)
    autocast_dtype = {"f32": None, "fp16": torch.float16, "bf16": torch.bfloat16}[args.precision]
    use_scaler = args.precision == "fp16" and device.type == "cuda"
    if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler"):
        scaler = torch.amp.GradScaler("cuda", init_scale=65536.0, growth_interval=2000, enabled=use_scaler)
    else:
        scaler = torch.cuda.amp.GradScaler(init_scale=65536.0, growth_interval=2000, enabled=use_scaler)

    def batch_for(split, index):
        if source == "batches":
            key = "inputs" if split == "train" else "val_inputs"
            if key not in batches:
                sys.exit(f"gpt_torch: {args.batches} has no {key}")
            n = batches[key].shape[0]
            x = batches[key][index % n]
            y = batches["targets" if split == "train" else "val_targets"][index % n]
        elif source == "data":
            x, y = text.batch_at(split, index)
        else:
            g = torch.Generator().manual_seed(index * 2 + (split != "train"))
            x = torch.randint(0, c["vocab"], (args.batch, args.context), generator=g, dtype=torch.int32)
            y = torch.randint(0, c["vocab"], (args.batch, args.context), generator=g, dtype=torch.int32)
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    def compute_loss(x, y):
        if autocast_dtype is None:
            return model(x, y)
        with torch.autocast(device_type=device.type, dtype=autocast_dtype):
            return model(x, y)

    def synchronize():
        if device.type == "cuda":
            torch.cuda.synchronize()

    losses = torch.zeros(args.steps, device=device)
    val_losses = []
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    first_step_at = None
    timed_from = None
    for step in range(args.steps):
        if step == args.warmup_timing:
            synchronize()
            timed_from = time.perf_counter()
        lr = lr_at(step, args)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = batch_for("train", step)
        loss = compute_loss(x, y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if args.clip > 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        scaler.step(optimizer)
        scaler.update()
        losses[step] = loss.detach().float()
        if first_step_at is None:
            synchronize()
            first_step_at = time.perf_counter() - _PROCESS_START
        if args.eval_interval and ((step + 1) % args.eval_interval == 0 or step + 1 == args.steps):
            model.eval()
            with torch.no_grad():
                total = 0.0
                for index in range(args.eval_iters):  # the same batches every time, as tapevm's
                    total += compute_loss(*batch_for("validation", index)).item()
            model.train()
            val_losses.append({"step": step + 1, "val_loss": total / args.eval_iters,
                               "elapsed": time.perf_counter() - started})
    synchronize()
    finished = time.perf_counter()
    timed_steps = args.steps - args.warmup_timing
    tokens_per_s = timed_steps * args.batch * args.context / (finished - timed_from) if timed_from else None
    loss_values = losses.cpu().tolist()
    if args.log:  # step order, each validation after its step's loss
        evaluations = {record["step"]: record for record in val_losses}
        with open(args.log, "w") as log:
            for step, value in enumerate(loss_values):
                record = {"step": step + 1, "loss": value if math.isfinite(value) else None, "lr": lr_at(step, args)}
                log.write(json.dumps(record) + "\n")
                if step + 1 in evaluations:
                    log.write(json.dumps(evaluations[step + 1]) + "\n")

    result = {
        "precision": args.precision, "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "config": c, "batch": args.batch, "context": args.context, "steps": args.steps,
        "batches": source or "random", "init": str(args.init) if args.init else None,
        "losses": loss_values, "val_losses": val_losses, "tokens_per_s": tokens_per_s,
        "seconds": finished - started, "process_start_to_first_step_s": first_step_at,
        "peak_memory_bytes": torch.cuda.max_memory_allocated(device) if device.type == "cuda" else None,
        "loss_scale": scaler.get_scale() if scaler.is_enabled() else None,
        "parameters": sum(p.numel() for p in model.parameters()),
    }
    final = {TAPEVM_NAME(name): p.detach().float().cpu() for name, p in model.state_dict().items()}
    if args.compare:
        theirs, _ = load_checkpoint(args.compare)
        # "compare": the worst tensor; "compare_loss_dependent": the same without attn.k.bias,
        # which the loss does not depend on (softmax cancels q . b), so that its gradient is
        # rounding noise and Adam moves it by about lr a step on either side.
        worst = {"name": None, "relative": 0.0}
        dependent = {"name": None, "relative": 0.0}
        for name, mine in final.items():
            other = theirs[name].float()
            relative = ((mine - other).abs().max() / other.abs().max().clamp_min(1e-30)).item()
            if relative >= worst["relative"]:
                worst = {"name": name, "relative": relative}
            if relative >= dependent["relative"] and not name.endswith("attn.k.bias"):
                dependent = {"name": name, "relative": relative}
        result["compare"] = worst
        result["compare_loss_dependent"] = dependent
    if args.save:
        if st_torch is not None:
            st_torch.save_file(final, str(args.save), metadata={**metadata, "written_by": "safetensors.torch"})
        else:
            write_safetensors(args.save, final, {**metadata, "written_by": "bench/gpt_torch.py"})
    text_out = json.dumps(result, indent=1)
    if args.json:
        args.json.write_text(text_out + "\n")
    else:
        print(text_out)
    print(f"gpt_torch: {args.precision} {args.steps} steps, first loss {loss_values[0]:.4f}, last "
          f"{loss_values[-1]:.4f}, {tokens_per_s or 0:,.0f} tokens/s", file=sys.stderr)
    return 0


def self_test():
    """The numpy safetensors code against the file spelled out in tests/nn/io/test_nn_safetensors.cpp
    and against the safetensors package (when installed); the RNG against values from tapevm's C++
    (tests/nn/io/test_nn_data.cpp checks the same numbers)."""
    import tempfile
    header = (b'{"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
              b'"i":{"dtype":"I32","shape":[],"data_offsets":[8,12]}}      ')
    reference = struct.pack("<Q", 144) + header + struct.pack("<ffi", 1.0, -2.5, 7)
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "reference.safetensors"
        path.write_bytes(reference)
        tensors, metadata = load_checkpoint(path)
        assert metadata == {"format": "pt"} and tensors["w"].tolist() == [1.0, -2.5] and tensors["i"].item() == 7
        ours = pathlib.Path(folder) / "ours.safetensors"
        write_safetensors(ours, {"w": tensors["w"], "i": tensors["i"]}, {"format": "pt"})
        assert ours.read_bytes() == reference, "writer differs from the reference bytes"
        every = {"f64": torch.tensor([1.5, -0.0], dtype=torch.float64), "bf16": torch.tensor([1.0, -3.0]).bfloat16(),
                 "f16": torch.tensor([0.5]).half(), "i32": torch.arange(6, dtype=torch.int32).view(2, 3)}
        write_safetensors(ours, every)
        back, _ = load_checkpoint(ours)
        assert all(torch.equal(back[k], v) for k, v in every.items())
        if st_torch is not None:
            theirs = pathlib.Path(folder) / "theirs.safetensors"
            st_torch.save_file(every, str(theirs))
            assert theirs.read_bytes() == ours.read_bytes(), "safetensors package writes other bytes"
    assert random_bits(1, 2, 3) == 0xD0734750FDE362B3 and random_bits(0, 0, 0) == 0x238275BC38FCBE91
    assert random_below(random_bits(1, 2, 3), 1000) == 814
    with tempfile.TemporaryDirectory() as folder:
        corpus = pathlib.Path(folder) / "corpus.txt"
        corpus.write_bytes(b"abcdefghij" * 10)
        text = TextBatches(corpus, context=4, batch=3, val_fraction=0.1, seed=7)
        x, y = text.batch_at("train", 2)  # windows at 61, 4, 50 (the C++ test checks the same)
        assert x[:, 0].tolist() == [1, 4, 0] and y[:, -1].tolist() == [5, 8, 4], (x, y)
        x, _ = text.batch_at("validation", 1)  # windows at 5, 2, 3
        assert x[:, 0].tolist() == [5, 2, 3]
    print(f"gpt_torch self-test: ok (safetensors package: {'yes' if st_torch else 'no'}); "
          f"random_bits(1, 2, 3) = {random_bits(1, 2, 3):#x}, random_bits(0, 0, 0) = {random_bits(0, 0, 0):#x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
