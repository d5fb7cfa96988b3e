#!/usr/bin/env python3
"""torch_sdpa.py - PyTorch's attention backends on fabench's cases, written as
an import file for `fabench import`.

For every case of a suite (the JSON of `fabench list SUITE --format json`)
and every backend asked for, this times one forward attention call of
PyTorch's scaled_dot_product_attention (SDPA) with the flash, cuDNN,
memory-efficient or math backend, or of FlexAttention (compiled); for a case
with pass bwd the backward alone (torch.autograd.grad of the forward's
output with fabench's dO: dQ, dK, dV), for pass fwd_bwd the forward and the
backward together; with fabench's method: a warm-up, then samples timed with CUDA events, the L2
flushed before each one outside the timed region (--cache cold-clean, the
default, as `fabench run` does: a buffer of twice its size written, then read
back so the L2 holds clean lines and the timed call pays for no write-backs;
--cache cold writes only, as Triton's do_bench does), until at least --samples samples and
--min-time-ms of them (or --max-time-ms); the median is reported.

With --dump DIR (from `fabench run --dump DIR`) the inputs are fabench's own
(bit-identical) and each output is checked against fabench's fp64 reference
rows with fabench's default tolerance for the dtype; a backward case's dO is
fabench's too, and dQ, dK and dV are checked against fabench's reference
gradients (the tolerance rule for gradients: max_abs scaled by the largest
reference element when over 1, rel_l2 x 3) and written as dq_max_abs, ...
for `fabench import`. Without a dump the inputs are random and the row says
"unchecked".

What each row measures is written in its reason: how GQA ran, which mask
form was used, and that a varlen batch is one SDPA call per sequence.

Only Python 3 and torch are needed (the dump's .npy files are read here,
without numpy); the parts that decide shapes, masks, plans, verdicts, read
dumps and write the output run without torch, and
bench/peers/test_torch_sdpa.py tests them.

    fabench list suites/vit.yaml --format json > cases.json
    fabench run suites/vit.yaml --backend cuda --dump dump --label ours
    python3 bench/peers/torch_sdpa.py --cases cases.json --dump dump --out peers.jsonl
    fabench import peers.jsonl --run-into ours
"""

import argparse
import ast
import datetime
import glob
import json
import math
import os
import socket
import struct
import sys
import time
import warnings

BACKENDS = ("flash", "cudnn", "efficient", "math", "flex")

# What a case times (its `pass`): the forward, the backward alone, or both.
PASSES = ("fwd", "bwd", "fwd_bwd")

# Kernel names as they appear in fabench's reports.
KERNEL_NAMES = {
    "flash": "torch_sdpa_flash",
    "cudnn": "torch_sdpa_cudnn",
    "efficient": "torch_sdpa_efficient",
    "math": "torch_sdpa_math",
    "flex": "torch_flex",
}

# fabench's default tolerance per dtype (harness/run/check.c, docs/suites.md):
# max_abs and rel_l2 against the fp64 reference.
TOLERANCE = {
    "fp32": (1e-3, 1e-4),
    "fp16": (1.5625e-2, 2e-3),
    "bf16": (1.25e-1, 1.6e-2),
}

# Denominator floor of max_rel, as fabench's check uses.
REL_FLOOR = 1e-3

# An explicit boolean mask of more elements than this (one sequence's
# q_len x kv_len) is not built: SDPA turns it into an additive mask of the
# input dtype, 0.5 GiB at this size, and a user would not do it either.
MAX_MASK_ELEMS = 1 << 28

# L2 size when torch does not report it: 50 MiB, the H100's.
DEFAULT_L2_BYTES = 50 << 20


class CaseError(Exception):
    """A case this script cannot run (a dump that does not match, ...)."""


# ---- cases and shapes (no torch) --------------------------------------------


def load_cases(path):
    """The suite header and the cases of `fabench list --format json`."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or "cases" not in doc:
        raise ValueError("%s is not the output of `fabench list --format json`" % path)
    suite = {k: doc.get(k) for k in ("suite", "path", "hash", "seed")}
    return suite, doc["cases"]


def scale_given(case):
    """True when the suite gave the scale explicitly (the key then says so)."""
    return ",scale=" in case["key"]


def case_fields(case):
    """The case's parameters as an import row takes them: the names of
    suites, only those that define the case, so that fabench rebuilds the
    same case and the same key (which is sent too, and checked)."""
    f = {
        "heads": case["heads"],
        "kv_heads": case["kv_heads"],
        "head_dim": case["head_dim"],
        "head_dim_v": case["head_dim_v"],
        "dtype": case["dtype"],
        "mask": case["mask"],
        "layout": case["layout"],
        "input": case["input"],
    }
    if case["varlen"]:
        f["seqlens"] = list(case["seqlens"])
        f["kv_seqlens"] = list(case["kv_seqlens"])
    else:
        f["batch"] = case["batch"]
        f["q_len"] = case["q_len"]
        f["kv_len"] = case["kv_len"]
    if case["mask"] == "prefix_lm":
        if case.get("prefix_lens") is not None:
            f["prefix_lens"] = list(case["prefix_lens"])
        else:
            f["prefix_len"] = case["prefix_len"]
    if case["mask"] == "sliding_window":
        f["window"] = case["window"]
    if scale_given(case):
        f["scale"] = case["scale"]
    if case.get("pass", "fwd") != "fwd":
        f["pass"] = case["pass"]
    f["key"] = case["key"]
    f["seed"] = case["seed"]
    return f


def case_pass(case):
    """fwd, bwd or fwd_bwd (older `fabench list` output has no pass: fwd)."""
    return case.get("pass") or "fwd"


class Shape(object):
    """What a backend needs to know of a case."""

    def __init__(self, case):
        self.batch = case["batch"]
        self.heads = case["heads"]
        self.kv_heads = case["kv_heads"]
        self.head_dim = case["head_dim"]
        self.head_dim_v = case["head_dim_v"]
        self.dtype = case["dtype"]
        self.mask = case["mask"]
        self.layout = case["layout"]
        self.window = case.get("window", 0)
        self.scale = case["scale"]
        self.varlen = bool(case["varlen"])
        self.total_q = case["total_q"]
        self.total_k = case["total_k"]
        if self.varlen:
            lq = list(case["seqlens"])
            lk = list(case["kv_seqlens"])
        else:
            lq = [case["q_len"]] * self.batch
            lk = [case["kv_len"]] * self.batch
        if case.get("prefix_lens") is not None:
            pre = list(case["prefix_lens"])
        else:
            pre = [case.get("prefix_len", 0)] * self.batch
        self.seqs = list(zip(lq, lk, pre))
        self.cu_q = [0]
        self.cu_k = [0]
        for q, k, _ in self.seqs:
            self.cu_q.append(self.cu_q[-1] + q)
            self.cu_k.append(self.cu_k[-1] + k)

    def tensor_shape(self, t):
        """The shape of fabench's buffer (and dump) of tensor t ('q', 'k',
        'v', 'o'): [batch, len, heads, dim] (bshd) or [batch, heads, len,
        dim] (bhsd); varlen drops batch and packs the tokens."""
        heads = self.heads if t in ("q", "o") else self.kv_heads
        dim = self.head_dim if t in ("q", "k") else self.head_dim_v
        if self.varlen:
            tokens = self.total_q if t in ("q", "o") else self.total_k
            return [tokens, heads, dim] if self.layout == "bshd" else [heads, tokens, dim]
        length = self.seqs[0][0] if t in ("q", "o") else self.seqs[0][1]
        if self.layout == "bshd":
            return [self.batch, length, heads, dim]
        return [self.batch, heads, length, dim]


def mask_allows(mask, i, j, lq, lk, prefix=0, window=0):
    """Whether query row i of a sequence with lq queries and lk keys may
    attend key j, with fabench's bottom-right alignment (diagonal at
    i + lk - lq). Works elementwise on torch tensors as on ints (no branch on
    values), so the same function builds SDPA's boolean masks and is
    FlexAttention's mask_mod."""
    if mask == "none":
        # both indices in it, so torch tensors broadcast to the full
        # (rows, keys) shape as the other masks do
        return (i >= 0) & (j >= 0)
    diag = i + (lk - lq)
    if mask == "causal":
        return j <= diag
    if mask == "prefix_lm":
        return (j < prefix) | (j <= diag)
    if mask == "sliding_window":
        return (j <= diag) & (j > diag - window)
    raise ValueError("unknown mask %r" % (mask,))


def mask_is_full(mask, lq, lk, prefix=0, window=0):
    """True when every row of the sequence sees every key: the mask is then
    no mask at all (a decode step under causal)."""
    if mask == "none":
        return True
    if mask == "causal":
        return lq <= 1
    if mask == "prefix_lm":
        return prefix >= lk or lq <= 1
    if mask == "sliding_window":
        return lq <= 1 and window >= lk
    raise ValueError("unknown mask %r" % (mask,))


def plan(case, backend):
    """How backend runs case, decided before any tensor exists:
    {"skip": reason or None, "modes": per sequence one of "none",
    "is_causal", "lower_right", "explicit", "block"; "varlen_loop": bool,
    "notes": [what the row measures]}."""
    s = Shape(case)
    notes = []
    out = {"skip": None, "modes": [], "varlen_loop": False, "notes": notes}
    full = [mask_is_full(s.mask, lq, lk, p, s.window) for lq, lk, p in s.seqs]
    if s.mask != "none" and all(full):
        notes.append("mask %s lets every query see every key here: run without a mask" % s.mask)
    if backend == "flex":
        # a varlen batch always needs the document mask
        out["modes"] = ["none" if all(full) and not s.varlen else "block"] * len(s.seqs)
        if s.varlen:
            notes.append("varlen: one FlexAttention call over the packed batch with a "
                         "document mask")
        if not all(full):
            notes.append("mask as a FlexAttention block mask (bottom-right aligned)")
        return out
    if backend not in KERNEL_NAMES:
        raise ValueError("unknown backend %r" % (backend,))
    if s.varlen:
        out["varlen_loop"] = True
        notes.append("varlen: one SDPA call per sequence, all inside the timed region "
                     "(SDPA has no varlen API)")
    for (lq, lk, p), is_full in zip(s.seqs, full):
        if is_full:
            mode = "none"
        elif s.mask == "causal" and lq == lk:
            mode = "is_causal"  # top-left and bottom-right agree on a square
        elif s.mask == "causal" and backend == "flash":
            mode = "lower_right"
        elif backend == "flash":
            out["skip"] = ("SDPA's flash backend takes no attn_mask, which mask %s needs "
                           "(torch_flex runs it)" % s.mask)
            return out
        else:
            mode = "explicit"
            if lq * lk > MAX_MASK_ELEMS:
                out["skip"] = ("an explicit %d x %d mask for mask %s is too large to build "
                               "(over %d elements)" % (lq, lk, s.mask, MAX_MASK_ELEMS))
                return out
        out["modes"].append(mode)
    if "lower_right" in out["modes"]:
        notes.append("causal with q_len != kv_len: torch.nn.attention.bias.causal_lower_right "
                     "(bottom-right, FA2's own causal)")
    if "explicit" in out["modes"]:
        notes.append("mask %s as an explicit bottom-right boolean attn_mask (SDPA's is_causal "
                     "is top-left)" % s.mask)
    return out


# ---- measurement and checking rules (no torch) ------------------------------


def median(xs):
    """The median as fabench computes it (mean of the middle two)."""
    v = sorted(xs)
    n = len(v)
    if n == 0:
        return float("nan")
    return v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])


def should_stop(samples, opts):
    """fabench's stopping rule: at least opts.samples samples adding up to
    opts.min_time_ms with a relative standard deviation under opts.max_noise;
    or opts.max_time_ms of samples, or opts.max_samples of them."""
    n = len(samples)
    total = sum(samples)
    if n >= opts.max_samples or total >= opts.max_time_ms:
        return True
    if n < max(opts.samples, 2) or total < opts.min_time_ms:
        return False
    mean = total / n
    var = sum((x - mean) ** 2 for x in samples) / (n - 1)
    return mean > 0 and math.sqrt(var) / mean < opts.max_noise


def measure(fn, timer, opts):
    """Times fn under the stopping rule with timer (flush(), start(),
    stop(), then times() -> the ms of the started/stopped pairs since the last
    call, synchronising). Returns the samples in ms."""
    for _ in range(opts.warmup):
        fn()
    timer.times()
    samples = []
    deadline = time.monotonic() + opts.case_timeout_s
    while not should_stop(samples, opts) and time.monotonic() < deadline:
        # a batch between synchronisations; the rule is checked per batch
        for _ in range(min(10, max(1, opts.max_samples - len(samples)))):
            timer.flush()
            timer.start()
            fn()
            timer.stop()
        samples.extend(timer.times())
    return samples


def verdict(dtype, stats):
    """("pass" | "fail", reason) under fabench's default tolerance rule:
    no NaN or Inf, max_abs and rel_l2 within TOLERANCE[dtype]."""
    tol_abs, tol_l2 = TOLERANCE[dtype]
    if stats.get("nan_count", 0) or stats.get("inf_count", 0):
        return "fail", "%d NaN and %d Inf in the output" % (stats.get("nan_count", 0),
                                                           stats.get("inf_count", 0))
    if not stats["max_abs"] <= tol_abs:
        return "fail", "max_abs %.3g > %.3g" % (stats["max_abs"], tol_abs)
    if not stats["rel_l2"] <= tol_l2:
        return "fail", "rel_l2 %.3g > %.3g" % (stats["rel_l2"], tol_l2)
    return "pass", None


# The gradients, as fabench names them, and their tensors' letters.
GRADS = ("dq", "dk", "dv")
GRAD_LABELS = {"dq": "dQ", "dk": "dK", "dv": "dV"}

# fabench's tolerance rule multiplies rel_l2's limit by this for gradients
# (FA_CHECK_GRAD_K: dS = P (dP - D) cancels, so correct gradients are less
# exact than O), and scales max_abs's by the largest reference element when
# that is over 1 (harness/run/check.c).
GRAD_K = 3.0


def grad_verdict(dtype, o_stats, grad_stats):
    """A backward result's ("pass" | "fail", reason): O (o_stats, None when
    not checked) under verdict(), then each gradient under fabench's
    tolerance rule for gradients; the reason names each failing tensor
    ("dK: max_abs 0.2 > 0.125")."""
    tol_abs, tol_l2 = TOLERANCE[dtype]
    why = []
    if o_stats is not None:
        st, r = verdict(dtype, o_stats)
        if st != "pass":
            why.append("O: " + r)
    for g in GRADS:
        s = grad_stats[g]
        label = GRAD_LABELS[g]
        if s.get("nan_count", 0) or s.get("inf_count", 0):
            why.append("%s: %d NaN and %d Inf" % (label, s.get("nan_count", 0),
                                                  s.get("inf_count", 0)))
            continue
        lim_abs = tol_abs * max(1.0, s.get("ref_max", 0.0))
        lim_l2 = tol_l2 * GRAD_K
        if not s["max_abs"] <= lim_abs:
            why.append("%s: max_abs %.3g > %.3g" % (label, s["max_abs"], lim_abs))
        if not s["rel_l2"] <= lim_l2:
            why.append("%s: rel_l2 %.3g > %.3g" % (label, s["rel_l2"], lim_l2))
    return ("fail", "; ".join(why)) if why else ("pass", None)


def tflops_of(case, ms):
    """TFLOP/s of case's pass at ms (fabench's list gives the pass's FLOPs:
    2.5 x the forward's for bwd, 3.5 x for fwd_bwd), or None."""
    flops = case.get("flops") or 0
    return flops / (ms * 1e-3) / 1e12 if flops and ms and ms > 0 else None


# ---- the import file (no torch) ---------------------------------------------


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_header(suite, device_name, torch_version, device_arch=None, runtime=None,
                started_at=None, command_line=None, host=None):
    """The run header of the import file."""
    run = {
        "source": "torch %s" % torch_version,
        "backend": "cuda",
        "device_name": device_name,
        "device_arch": device_arch,
        "runtime": runtime,
        "host": host,
        "started_at": started_at or utc_now(),
        "suite_name": suite.get("suite"),
        "suite_path": suite.get("path"),
        "suite_hash": suite.get("hash"),
        "seed": suite.get("seed"),
        "command_line": command_line,
    }
    return {"run": {k: v for k, v in run.items() if v is not None}}


STAT_FIELDS = ("max_abs", "max_rel", "mean_abs", "rel_l2", "nmse", "nan_count", "inf_count",
               "rows_checked", "elems_checked")


def result_row(case, kernel, status, reason=None, samples=None, stats=None, timing="cold",
               grads=None):
    """One import row: the case's parameters, the kernel, the verdict and
    what was measured. samples in ms (the median is sent too; fabench
    recomputes it), stats from error_stats (O's), grads {"dq": stats, "dk":
    .., "dv": ..} of a backward (written dq_max_abs, ...)."""
    row = case_fields(case)
    row["kernel"] = kernel
    row["status"] = status
    if reason:
        row["reason"] = reason
    if samples:
        row["median_ms"] = median(samples)
        row["samples"] = list(samples)
        row["timing"] = timing
    if stats:
        for k in STAT_FIELDS:
            if k in stats:
                row[k] = stats[k]
        row["rule"] = "tolerance"
    if grads:
        for g in GRADS:
            for k in STAT_FIELDS:
                if k in grads[g]:
                    row["%s_%s" % (g, k)] = grads[g][k]
        row["rule"] = "tolerance"
    return row


def _clean(v):
    """NaN and Inf are not JSON: they become null (absent for fabench)."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def jsonl_line(obj):
    return json.dumps(_clean(obj), allow_nan=False, separators=(", ", ": ")) + "\n"


class JsonlWriter(object):
    """Writes the header at once and each row as it comes (flushed), so a
    run that dies keeps what it measured."""

    def __init__(self, path, header):
        self.f = open(path, "w", encoding="utf-8")
        self.f.write(jsonl_line(header))
        self.f.flush()

    def write(self, row):
        self.f.write(jsonl_line(row))
        self.f.flush()

    def close(self):
        self.f.close()


def write_jsonl(path, header, rows):
    """The whole import file at once."""
    w = JsonlWriter(path, header)
    for r in rows:
        w.write(r)
    w.close()


# The .npy element types fabench writes, and their sizes.
NPY_TYPES = {"<f2": 2, "<f4": 4, "<f8": 8, "<i8": 8, "<i4": 4}


def read_npy(path):
    """(descr, shape, raw little-endian bytes) of a C-order .npy file of one
    of NPY_TYPES, as fabench's --dump writes them (format 1.0 to 3.0)."""
    with open(path, "rb") as f:
        if f.read(6) != b"\x93NUMPY":
            raise CaseError("%s is not a .npy file" % path)
        major = f.read(2)[0]
        size = struct.unpack("<H", f.read(2))[0] if major == 1 else \
            struct.unpack("<I", f.read(4))[0]
        header = ast.literal_eval(f.read(size).decode("latin1"))
        descr, shape = header["descr"], [int(x) for x in header["shape"]]
        if header.get("fortran_order") or descr not in NPY_TYPES:
            raise CaseError("%s holds %s%s, not one of %s" % (
                path, descr, " in Fortran order" if header.get("fortran_order") else "",
                ", ".join(sorted(NPY_TYPES))))
        n = NPY_TYPES[descr]
        for d in shape:
            n *= d
        data = f.read(n)
    if len(data) != n:
        raise CaseError("%s is truncated: %d of %d bytes" % (path, len(data), n))
    return descr, shape, data


# The files of a dumped case, and the backward's besides (fabench run
# --dump, docs/backward.md).
DUMP_FILES = ("_q.npy", "_k.npy", "_v.npy", "_ref.npy", "_ref_rows.npy")
DUMP_BWD_FILES = ("_do.npy", "_ref_dq.npy", "_ref_dk.npy", "_ref_dv.npy", "_ref_dq_rows.npy",
                  "_ref_kv_rows.npy")


def find_dumps(folder):
    """{case key: path prefix "folder/caseNNNN"} of a `fabench run --dump`
    folder, read from its caseNNNN.json files (matched by key, not index, so
    a --where that renumbered the cases cannot mismatch them). A bwd or
    fwd_bwd case counts only with its dO and reference gradients (a run
    whose backward kernels all skipped it has none)."""
    found = {}
    for meta in sorted(glob.glob(os.path.join(folder, "case[0-9]*.json"))):
        with open(meta, encoding="utf-8") as f:
            info = json.load(f)
        prefix = meta[:-len(".json")]
        files = DUMP_FILES + (DUMP_BWD_FILES if info.get("pass", "fwd") != "fwd" else ())
        if all(os.path.exists(prefix + s) for s in files):
            found[info["key"]] = prefix
    return found


def parse_args(argv=None):
    p = argparse.ArgumentParser(
        description="Time and check PyTorch SDPA backends and FlexAttention on fabench's "
        "cases; write a file for `fabench import`.")
    p.add_argument("--cases", required=True, help="output of `fabench list SUITE --format json`")
    p.add_argument("--dump", help="folder of `fabench run --dump`: fabench's inputs and "
                   "reference (without it: random inputs, unchecked)")
    p.add_argument("--out", required=True, help="the import file to write (JSON lines)")
    p.add_argument("--backends", default=",".join(BACKENDS),
                   help="comma-separated subset of %s (default: all)" % ",".join(BACKENDS))
    p.add_argument("--min-time-ms", type=float, default=100.0,
                   help="at least this many ms of samples (default 100)")
    p.add_argument("--max-time-ms", type=float, default=2000.0,
                   help="stop at this many ms of samples (default 2000)")
    p.add_argument("--samples", type=int, default=10, help="at least this many samples (default 10)")
    p.add_argument("--max-samples", type=int, default=1000, help="at most (default 1000)")
    p.add_argument("--max-noise", type=float, default=0.005,
                   help="stop when the relative stdev is under this (default 0.005)")
    p.add_argument("--warmup", type=int, default=2, help="untimed calls first (default 2)")
    p.add_argument("--cache", choices=("cold-clean", "cold", "hot"), default="cold-clean",
                   help="flush the L2 before each sample leaving clean lines (cold-clean, "
                   "default, as fabench run), by writing only (cold, as do_bench), or not (hot)")
    p.add_argument("--case-timeout-s", type=float, default=60.0,
                   help="wall-clock limit of one case's sampling (default 60)")
    p.add_argument("--index", help="only these case indices (comma-separated)")
    p.add_argument("--pass", dest="passes", default="fwd,bwd,fwd_bwd",
                   help="only the cases of these passes (comma-separated subset of fwd, bwd, "
                   "fwd_bwd; default all): fwd times the forward, bwd the backward alone, "
                   "fwd_bwd both")
    p.add_argument("--flex-static", action="store_true",
                   help="compile FlexAttention for each shape (slower to start; default: "
                   "dynamic shapes after the first recompile)")
    a = p.parse_args(argv)
    a.backends = [b.strip() for b in a.backends.split(",") if b.strip()]
    for b in a.backends:
        if b not in BACKENDS:
            p.error("unknown backend '%s' (expected %s)" % (b, ", ".join(BACKENDS)))
    if not a.backends:
        p.error("--backends is empty")
    if a.samples < 1 or a.max_samples < a.samples:
        p.error("--samples must be >= 1 and <= --max-samples")
    if a.min_time_ms < 0 or a.max_time_ms <= 0:
        p.error("--min-time-ms must be >= 0 and --max-time-ms > 0")
    if not a.case_timeout_s > 0:
        p.error("--case-timeout-s must be > 0 (a case with no time to sample has no samples)")
    if a.warmup < 0:
        p.error("--warmup must be >= 0")
    try:
        a.index = set(int(x) for x in a.index.split(",")) if a.index else None
    except ValueError:
        p.error("--index takes case indices separated by commas (3,5,8), got '%s'" % a.index)
    a.passes = [x.strip() for x in a.passes.split(",") if x.strip()]
    for x in a.passes:
        if x not in PASSES:
            p.error("unknown pass '%s' (expected %s)" % (x, ", ".join(PASSES)))
    if not a.passes:
        p.error("--pass is empty")
    return a


# ---- the GPU part (torch) ---------------------------------------------------


def _short(e, limit=400):
    """An exception's message on one line, not too long."""
    msg = " ".join(str(e).split()) or type(e).__name__
    return msg if len(msg) <= limit else msg[:limit - 3] + "..."


class CudaTimer(object):
    """CUDA events around each sample; before each, a buffer of twice the
    L2 size is written (outside the events) so every sample starts cold, and
    with clean=True read back, so the L2 holds clean lines and the timed call
    is not charged for writing the flush's dirty lines back (fabench's
    cold-clean)."""

    def __init__(self, torch, cold, clean=False):
        self.torch = torch
        self.pairs = []
        self.buf = None
        self.clean = clean
        if cold:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            l2 = getattr(props, "L2_cache_size", 0) or DEFAULT_L2_BYTES
            self.buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")

    def flush(self):
        if self.buf is not None:
            self.buf.zero_()
            if self.clean:
                self.buf.sum()

    def start(self):
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()
        self.pairs.append([e, None])

    def stop(self):
        e = self.torch.cuda.Event(enable_timing=True)
        e.record()
        self.pairs[-1][1] = e

    def times(self):
        self.torch.cuda.synchronize()
        out = [a.elapsed_time(b) for a, b in self.pairs]
        self.pairs = []
        return out


class Gpu(object):
    """torch, imported only here, and what the backends share."""

    def __init__(self, opts, device="cuda", timer=None):
        import torch  # noqa: the GPU part only
        import torch.nn.functional as F
        self.torch = torch
        self.F = F
        self.opts = opts
        self.device = device  # another device (and timer) only to test this code
        if device == "cuda" and not torch.cuda.is_available():
            raise SystemExit("torch_sdpa.py: no CUDA device")
        self.dtypes = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
        self.timer = timer or CudaTimer(torch, opts.cache != "hot",
                                          opts.cache == "cold-clean")
        self._flex = None
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel
            self.sdpa_kernel = sdpa_kernel
            self.sdp = {"flash": SDPBackend.FLASH_ATTENTION,
                        "cudnn": SDPBackend.CUDNN_ATTENTION,
                        "efficient": SDPBackend.EFFICIENT_ATTENTION,
                        "math": SDPBackend.MATH}
        except (ImportError, AttributeError) as e:
            self.sdpa_kernel = None
            self.sdp_error = _short(e)

    def device_info(self):
        t = self.torch
        cap = t.cuda.get_device_capability()
        return {"device_name": t.cuda.get_device_name(),
                "device_arch": "sm_%d%d" % cap,
                "runtime": "CUDA %s" % t.version.cuda}

    # -- inputs

    def inputs(self, case, shape, dump):
        """q, k, v on the GPU in fabench's layout (dense buffers), and the
        reference (rows, values) or None."""
        t = self.torch
        dt = self.dtypes[shape.dtype]
        if dump:
            qkv = []
            for name in ("q", "k", "v"):
                a = self.load_npy(dump + "_%s.npy" % name)
                if list(a.shape) != shape.tensor_shape(name):
                    raise CaseError("dump %s_%s.npy has shape %s, the case needs %s" %
                                    (dump, name, list(a.shape), shape.tensor_shape(name)))
                # bf16 is dumped widened to float32: narrowing back is exact
                qkv.append(a.to(device=self.device, dtype=dt).contiguous())
            rows = self.load_npy(dump + "_ref_rows.npy").to(self.device)
            ref = self.load_npy(dump + "_ref.npy").to(self.device, dtype=t.float64)
            if ref.dim() != 2 or ref.shape[0] != rows.numel() or ref.shape[1] != shape.head_dim_v:
                raise CaseError("dump %s_ref.npy has shape %s for %d rows of %d" %
                                (dump, list(ref.shape), rows.numel(), shape.head_dim_v))
            return qkv[0], qkv[1], qkv[2], (rows, ref)
        g = t.Generator(device=self.device)
        g.manual_seed(int(case["seed"]) & ((1 << 63) - 1))
        qkv = [t.randn(shape.tensor_shape(n), device=self.device, dtype=t.float32,
                       generator=g).to(dt) for n in ("q", "k", "v")]
        return qkv[0], qkv[1], qkv[2], None

    def grad_inputs(self, case, shape, dump):
        """A backward case's dO on the GPU (fabench's, laid out as O) and
        the reference gradients {"dq": (rows, values), "dk": .., "dv": ..}
        or None (rows: token * heads + head for dq, key token * kv_heads +
        kv head for dk and dv)."""
        t = self.torch
        dt = self.dtypes[shape.dtype]
        if not dump:
            g = t.Generator(device=self.device)
            g.manual_seed((int(case["seed"]) ^ 0x5bd1e995) & ((1 << 63) - 1))
            return t.randn(shape.tensor_shape("o"), device=self.device, dtype=t.float32,
                           generator=g).to(dt), None
        do = self.load_npy(dump + "_do.npy")
        if list(do.shape) != shape.tensor_shape("o"):
            raise CaseError("dump %s_do.npy has shape %s, the case needs %s" %
                            (dump, list(do.shape), shape.tensor_shape("o")))
        do = do.to(device=self.device, dtype=dt).contiguous()
        rows_q = self.load_npy(dump + "_ref_dq_rows.npy").to(self.device)
        rows_kv = self.load_npy(dump + "_ref_kv_rows.npy").to(self.device)
        gref = {}
        for name, rows, dim in (("dq", rows_q, shape.head_dim), ("dk", rows_kv, shape.head_dim),
                                ("dv", rows_kv, shape.head_dim_v)):
            ref = self.load_npy(dump + "_ref_%s.npy" % name).to(self.device, dtype=t.float64)
            if ref.dim() != 2 or ref.shape[0] != rows.numel() or ref.shape[1] != dim:
                raise CaseError("dump %s_ref_%s.npy has shape %s for %d rows of %d" %
                                (dump, name, list(ref.shape), rows.numel(), dim))
            gref[name] = (rows, ref)
        return do, gref

    def leaf_rows(self, x, shape):
        """A gradient in fabench's layout (as Q, or as K/V) as fabench's rows:
        packed token * heads + head (kv heads for K/V), [rows, dim]."""
        if shape.layout == "bhsd":
            x = x.transpose(-3, -2)  # [.., len, heads, dim]
        return x.reshape(-1, x.shape[-1])

    def do_views(self, backend, shape, do):
        """dO in the views the outputs of callable_for have."""
        if backend == "flex" and shape.varlen:
            return [self.packed_view(do, shape)]
        if shape.varlen:
            return [self.seq_view(do, shape, b, True) for b in range(len(shape.seqs))]
        return [self.seq_view(do, shape, None, True)]

    def load_npy(self, path):
        """A .npy file as a CPU tensor."""
        t = self.torch
        types = {"<f2": t.float16, "<f4": t.float32, "<f8": t.float64, "<i8": t.int64,
                 "<i4": t.int32}
        descr, shape, data = read_npy(path)
        if not data:
            return t.empty(shape, dtype=types[descr])
        return t.frombuffer(bytearray(data), dtype=types[descr]).reshape(shape)

    # -- views: SDPA and flex take [batch, heads, len, dim]

    def seq_view(self, x, shape, b, is_q):
        """Sequence b of x as [1, heads, len, dim] (varlen) or the whole
        batch as [batch, heads, len, dim] (b None)."""
        if not shape.varlen:
            return x.transpose(1, 2) if shape.layout == "bshd" else x
        cu = shape.cu_q if is_q else shape.cu_k
        s, e = cu[b], cu[b + 1]
        if shape.layout == "bshd":
            return x[s:e].transpose(0, 1).unsqueeze(0)
        return x[:, s:e].unsqueeze(0)

    def packed_view(self, x, shape):
        """A varlen tensor as [1, heads, tokens, dim] (for flex)."""
        return x.transpose(0, 1).unsqueeze(0) if shape.layout == "bshd" else x.unsqueeze(0)

    def rows_of(self, outs, shape):
        """Outputs ([b, heads, len, dv] each) as fabench's rows: packed
        token * heads + head, [rows, dv]."""
        t = self.torch
        if len(outs) == 1 and not shape.varlen:
            o = outs[0].transpose(1, 2)  # [batch, len, heads, dv]
        elif len(outs) == 1:
            o = outs[0][0].transpose(0, 1)  # packed [tokens, heads, dv]
        else:
            o = t.cat([x[0].transpose(0, 1) for x in outs], 0)
        return o.reshape(-1, shape.head_dim_v)

    # -- masks

    def dense_mask(self, shape, lq, lk, prefix):
        t = self.torch
        i = t.arange(lq, device=self.device).unsqueeze(1)
        j = t.arange(lk, device=self.device).unsqueeze(0)
        return mask_allows(shape.mask, i, j, lq, lk, prefix, shape.window)

    def flex(self):
        if self._flex is None:
            t = self.torch
            from torch.nn.attention.flex_attention import create_block_mask, flex_attention
            cfg = t._dynamo.config
            # every case is a new shape: let dynamo keep them all compiled
            for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                         "accumulated_recompile_limit"):
                if hasattr(cfg, name):
                    setattr(cfg, name, 1 << 16)
            # default: dynamo's automatic dynamic shapes, so the cases of a suite
            # share a few compiled kernels (a user compiles once, too);
            # --flex-static compiles one kernel per shape
            dyn = False if self.opts.flex_static else None
            self._flex = (t.compile(flex_attention, dynamic=dyn), create_block_mask)
        return self._flex

    def block_mask(self, shape, nq, nk):
        t = self.torch
        create = self.flex()[1]
        mask, window = shape.mask, shape.window
        if shape.varlen:
            def tok_doc(cu, n):
                doc = t.zeros(n, dtype=t.int32, device=self.device)
                for b in range(1, len(cu) - 1):
                    doc[cu[b]:] += 1
                return doc
            doc_q, doc_k = tok_doc(shape.cu_q, nq), tok_doc(shape.cu_k, nk)
            dev = self.device
            cu_q = t.tensor(shape.cu_q, device=dev)
            cu_k = t.tensor(shape.cu_k, device=dev)
            lq = t.tensor([s[0] for s in shape.seqs], device=dev)
            lk = t.tensor([s[1] for s in shape.seqs], device=dev)
            pre = t.tensor([s[2] for s in shape.seqs], device=dev)

            def mask_mod(b, h, qi, ki):
                dq, dk = doc_q[qi], doc_k[ki]
                i, j = qi - cu_q[dq], ki - cu_k[dk]
                return (dq == dk) & mask_allows(mask, i, j, lq[dq], lk[dq], pre[dq], window)
            batch = 1
        else:
            lq, lk, pre = shape.seqs[0]

            def mask_mod(b, h, qi, ki):
                return mask_allows(mask, qi, ki, lq, lk, pre, window)
            batch = None
        try:
            return create(mask_mod, batch, None, nq, nk, device=self.device, _compile=True)
        except TypeError:
            return create(mask_mod, batch, None, nq, nk, device=self.device)

    # -- one backend on one case

    def callable_for(self, backend, pl, shape, q, k, v, repeat_kv):
        """A function running the attention (all sequences of a varlen
        batch) and returning the outputs; built outside the timed region."""
        t, F = self.torch, self.F
        g = shape.heads // shape.kv_heads
        scale = shape.scale

        def kv(x):
            return x.repeat_interleave(g, dim=1) if repeat_kv and g > 1 else x

        gqa = g > 1 and not repeat_kv
        if backend == "flex":
            fn = self.flex()[0]
            if shape.varlen:
                qq, kk, vv = (self.packed_view(x, shape) for x in (q, k, v))
            else:
                qq, kk, vv = (self.seq_view(x, shape, None, x is q) for x in (q, k, v))
            kk, vv = kv(kk), kv(vv)
            bm = None if pl["modes"][0] == "none" else self.block_mask(shape, qq.shape[2],
                                                                      kk.shape[2])
            kw = {"block_mask": bm, "scale": scale}
            if gqa:
                kw["enable_gqa"] = True
            return lambda: [fn(qq, kk, vv, **kw)]
        calls = []
        n = len(shape.seqs) if shape.varlen else 1
        for b in range(n):
            mode = pl["modes"][b]
            lq, lk, pre = shape.seqs[b]
            qq = self.seq_view(q, shape, b if shape.varlen else None, True)
            kk = kv(self.seq_view(k, shape, b if shape.varlen else None, False))
            vv = kv(self.seq_view(v, shape, b if shape.varlen else None, False))
            kw = {"scale": scale}
            if gqa:
                kw["enable_gqa"] = True
            if mode == "is_causal":
                kw["is_causal"] = True
            elif mode == "lower_right":
                from torch.nn.attention.bias import causal_lower_right
                self.check_flash(qq, kk, vv, gqa)
                kw["attn_mask"] = causal_lower_right(lq, lk)
            elif mode == "explicit":
                kw["attn_mask"] = self.dense_mask(shape, lq, lk, pre)
            calls.append((qq, kk, vv, kw))
        return lambda: [F.scaled_dot_product_attention(a, b_, c, **kw) for a, b_, c, kw in calls]

    def check_flash(self, q, k, v, gqa):
        """causal_lower_right runs FA2 only when flash can take the inputs,
        and silently falls back to another kernel otherwise: refuse then,
        so a torch_sdpa_flash row is always flash."""
        from torch.backends.cuda import SDPAParams, can_use_flash_attention
        # is_causal False, as CausalBias asks: SDPA's check refuses is_causal
        # on a non-square problem, which FA2 itself runs bottom-right
        try:
            params = SDPAParams(q, k, v, None, 0.0, False, gqa)
        except TypeError:
            params = SDPAParams(q, k, v, None, 0.0, False)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            ok = can_use_flash_attention(params, True)
        if not ok:
            why = "; ".join(_short(x.message, 200) for x in w) or "flash cannot take these inputs"
            raise RuntimeError("flash refused the case: " + why)

    def run(self, backend, case, shape, pl, q, k, v, ref, do=None, gref=None):
        """Runs one backend: (status, reason, samples, stats, grads); a bwd
        or fwd_bwd case (do given) its backward."""
        t = self.torch
        notes = list(pl["notes"])
        bwd = case_pass(case) != "fwd"
        if bwd:
            # leaves in fabench's layout: their gradients come out in it
            q, k, v = (x.detach().requires_grad_(True) for x in (q, k, v))
        if backend != "flex" and self.sdpa_kernel is None:
            return "skip", "this torch has no torch.nn.attention.sdpa_kernel: " + \
                self.sdp_error, None, None, None
        ctx = (self.sdpa_kernel(self.sdp[backend]) if backend != "flex"
               else _Nothing())
        g = shape.heads // shape.kv_heads
        attempts = [False, True] if g > 1 else [False]
        first_error = None
        with ctx:
            for repeat_kv in attempts:
                try:
                    with warnings.catch_warnings(record=True) as caught:
                        warnings.simplefilter("always")
                        fn = self.callable_for(backend, pl, shape, q, k, v, repeat_kv)
                        outs = fn()
                        if bwd:
                            dos = self.do_views(backend, shape, do)
                            grads = t.autograd.grad(outs, (q, k, v), grad_outputs=dos,
                                                    retain_graph=True)
                        self.timer.times()  # synchronises: errors show here
                except (RuntimeError, NotImplementedError, ImportError) as e:
                    # the backend refused (or ran out of memory, or this torch lacks it)
                    why = _short(e)
                    # SDPA says why a backend refused in warnings
                    extra = [_short(x.message, 300) for x in caught]
                    if extra:
                        why += " (" + "; ".join(extra[:3]) + ")"
                    if isinstance(e, getattr(t, "OutOfMemoryError", ())):
                        why = "out of memory: " + why
                    first_error = first_error or why
                    if self.device == "cuda":
                        t.cuda.empty_cache()
                    continue
                if g > 1:
                    notes.append(("GQA: K/V repeated to all heads before timing (the copy is "
                                  "not timed%s; enable_gqa was refused)" %
                                  (", the sum of its gradient over the group is" if bwd else ""))
                                 if repeat_kv else "GQA: enable_gqa=True")
                break
            else:
                return "skip", first_error, None, None, None
            rows = self.rows_of(outs, shape)
            stats = self.error_stats(rows, ref)
            del rows
            gstats = None
            if bwd:
                gstats = {}
                for name, x in zip(GRADS, grads):
                    gstats[name] = self.error_stats(self.leaf_rows(x, shape),
                                                    gref[name] if gref else None)
                del grads
                if case_pass(case) == "bwd":
                    notes.append("backward alone: torch.autograd.grad of the forward's output "
                                 "(graph kept) with fabench's dO")
                    timed = (lambda: t.autograd.grad(outs, (q, k, v), grad_outputs=dos,
                                                     retain_graph=True))
                else:
                    del outs
                    notes.append("forward, then torch.autograd.grad with fabench's dO")
                    timed = (lambda: t.autograd.grad(fn(), (q, k, v), grad_outputs=dos))
                samples = measure(timed, self.timer, self.opts)
                del timed
            else:
                del outs
                samples = measure(fn, self.timer, self.opts)
        seen = [("output", stats)] + ([(GRAD_LABELS[g], gstats[g]) for g in GRADS]
                                      if gstats else [])
        bad = [(n, x) for n, x in seen if x["nan_count"] or x["inf_count"]]
        if ref is None:
            status, why = ("fail", "; ".join("%d NaN and %d Inf in the %s" %
                                             (x["nan_count"], x["inf_count"], n)
                                             for n, x in bad)) if bad else ("pass", "unchecked")
            reason = "; ".join([why] + notes)
            return status, reason, samples, None, None
        if gstats is not None:
            status, why = grad_verdict(shape.dtype, stats, gstats)
        else:
            status, why = verdict(shape.dtype, stats)
        reason = "; ".join(([why] if why else []) + notes) or None
        return status, reason, samples, stats, gstats

    def error_stats(self, rows, ref):
        """fabench's statistics of the output rows against the reference:
        over the finite elements of the reference rows; NaN and Inf over the
        whole output."""
        t = self.torch
        st = {"nan_count": int(t.isnan(rows).sum()), "inf_count": int(t.isinf(rows).sum())}
        if ref is None:
            return st
        idx, r = ref
        o = rows.index_select(0, idx).to(t.float64)
        fin = t.isfinite(o)
        d = t.where(fin, (o - r).abs(), t.zeros_like(o))
        rr = t.where(fin, r, t.zeros_like(r))
        n = int(fin.sum())
        ss_r = float((rr * rr).sum())
        ss_d = float((d * d).sum())
        st.update({
            "max_abs": float(d.max()) if n else 0.0,
            "max_rel": float((d / rr.abs().clamp_min(REL_FLOOR)).max()) if n else 0.0,
            "mean_abs": float(d.sum()) / n if n else 0.0,
            "rel_l2": math.sqrt(ss_d / ss_r) if ss_r > 0 else math.sqrt(ss_d),
            "nmse": ss_d / ss_r if ss_r > 0 else ss_d,
            "rows_checked": int(idx.numel()),
            "elems_checked": int(idx.numel()) * r.shape[1],
            "ref_max": float(rr.abs().max()) if n else 0.0,
        })
        return st


class _Nothing(object):
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main(argv=None):
    opts = parse_args(argv)
    suite, cases = load_cases(opts.cases)
    dumps = find_dumps(opts.dump) if opts.dump else {}
    if opts.dump and not dumps:
        print("torch_sdpa.py: no dumped cases in %s: running unchecked" % opts.dump,
              file=sys.stderr)
    gpu = Gpu(opts)
    info = gpu.device_info()
    header = make_header(suite, info["device_name"], gpu.torch.__version__,
                         device_arch=info["device_arch"], runtime=info["runtime"],
                         command_line=" ".join(sys.argv), host=socket.gethostname())
    w = JsonlWriter(opts.out, header)
    counts = {}
    try:
        for case in cases:
            if opts.index is not None and case["index"] not in opts.index:
                continue
            if case_pass(case) not in opts.passes:
                continue
            shape = Shape(case)
            dump = dumps.get(case["key"])
            do = gref = None
            try:
                q, k, v, ref = gpu.inputs(case, shape, dump)
                if case_pass(case) != "fwd":
                    do, gref = gpu.grad_inputs(case, shape, dump)
            except (CaseError, RuntimeError, OSError, ValueError) as e:
                for b in opts.backends:
                    w.write(result_row(case, KERNEL_NAMES[b], "error", "inputs: " + _short(e)))
                continue
            for b in opts.backends:
                pl = plan(case, b)
                if pl["skip"]:
                    row = result_row(case, KERNEL_NAMES[b], "skip", pl["skip"])
                else:
                    try:
                        status, reason, samples, stats, grads = gpu.run(
                            b, case, shape, pl, q, k, v, ref, do, gref)
                    except Exception as e:  # noqa: a broken backend must not stop the others
                        status, reason, samples, stats, grads = "error", _short(e), None, None, None
                    row = result_row(case, KERNEL_NAMES[b], status, reason, samples, stats,
                                     opts.cache, grads)
                w.write(row)
                counts[row["status"]] = counts.get(row["status"], 0) + 1
                rate = tflops_of(case, row.get("median_ms"))
                print("%5d %-7s %-22s %-5s %s" % (
                    case["index"], case_pass(case), KERNEL_NAMES[b], row["status"],
                    ("%.4f ms" % row["median_ms"] + (" %.1f TFLOP/s" % rate if rate else ""))
                    if "median_ms" in row else row.get("reason", "")), flush=True)
            del q, k, v, ref, do, gref
            gpu.torch.cuda.empty_cache()
    finally:
        w.close()
    print("wrote %s: %s" % (opts.out, ", ".join("%d %s" % (n, s) for s, n in
                                                sorted(counts.items()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
