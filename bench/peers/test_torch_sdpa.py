#!/usr/bin/env python3
"""test_torch_sdpa.py - the parts of torch_sdpa.py that run without a GPU:
argument parsing, the case -> import-row and case -> shape mappings, the mask
rules (against a brute-force copy of fabench's), the per-backend plans, the
stopping rule and the timing loop (with a fake timer and a fake torch), the
verdicts, and the JSON-lines writer. Tests that need torch skip without it.

    python3 bench/peers/test_torch_sdpa.py      (make test runs it when python3 is there)
"""

import io
import json
import math
import os
import shutil
import struct
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_sdpa as ts  # noqa: E402

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except ImportError:
    HAVE_TORCH = False


def make_case(**kw):
    """A case as `fabench list --format json` writes it (tiny defaults)."""
    c = {"index": 0, "batch": 1, "heads": 4, "kv_heads": 4, "q_len": 64, "kv_len": 64,
         "head_dim": 64, "head_dim_v": 64, "dtype": "fp16", "mask": "none", "prefix_len": 0,
         "window": 0, "layout": "bshd", "input": "normal", "varlen": 0, "scale": 0.125,
         "seed": 18446744073709551557, "seqlens": None, "kv_seqlens": None,
         "prefix_lens": None, "flops": 0, "bytes": 0}
    c.update(kw)
    if c["varlen"]:
        c["batch"] = len(c["seqlens"])
        c["q_len"] = max(c["seqlens"])
        c["kv_len"] = max(c["kv_seqlens"])
        c["total_q"] = sum(c["seqlens"])
        c["total_k"] = sum(c["kv_seqlens"])
    else:
        c["total_q"] = c["batch"] * c["q_len"]
        c["total_k"] = c["batch"] * c["kv_len"]
    c.setdefault("key", "batch=%d,heads=%d,...,mask=%s" % (c["batch"], c["heads"], c["mask"]))
    return c


def fabench_allows(mask, i, j, lq, lk, prefix, window):
    """fa_mask_allows of kernels/common/fa_problem.h, written out again."""
    if mask == "prefix_lm" and j < prefix:
        return True
    diag = i + lk - lq
    lo, hi = 0, lk
    if mask != "none":
        hi = diag + 1
        if mask == "sliding_window":
            lo = diag - window + 1
    lo = max(lo, 0)
    hi = min(hi, lk)
    hi = max(hi, lo)
    return lo <= j < hi


class Opts(object):
    def __init__(self, **kw):
        self.samples, self.min_time_ms, self.max_time_ms = 10, 100.0, 2000.0
        self.max_samples, self.max_noise, self.warmup = 1000, 0.005, 2
        self.case_timeout_s = 60.0
        self.__dict__.update(kw)


class ArgsTest(unittest.TestCase):
    def test_defaults(self):
        a = ts.parse_args(["--cases", "c.json", "--out", "p.jsonl"])
        self.assertEqual(a.backends, list(ts.BACKENDS))
        self.assertEqual((a.min_time_ms, a.samples, a.cache), (100.0, 10, "cold-clean"))
        self.assertIsNone(a.dump)
        self.assertIsNone(a.index)

    def test_backends_and_index(self):
        a = ts.parse_args(["--cases", "c", "--out", "o", "--backends", "flash, math",
                           "--index", "3,5", "--min-time-ms", "50", "--samples", "20"])
        self.assertEqual(a.backends, ["flash", "math"])
        self.assertEqual(a.index, {3, 5})
        self.assertEqual((a.min_time_ms, a.samples), (50.0, 20))

    def test_bad_arguments_exit_2(self):
        for argv in (["--cases", "c", "--out", "o", "--backends", "flash,xformers"],
                     ["--cases", "c", "--out", "o", "--backends", ","],
                     ["--cases", "c", "--out", "o", "--samples", "0"],
                     ["--cases", "c", "--out", "o", "--case-timeout-s", "0"],
                     ["--cases", "c", "--out", "o", "--case-timeout-s", "nan"],
                     ["--cases", "c", "--out", "o", "--warmup", "-1"],
                     ["--cases", "c", "--out", "o", "--index", "3,x"],
                     ["--out", "o"]):
            with redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit) as cm:
                ts.parse_args(argv)
            self.assertEqual(cm.exception.code, 2, argv)
        self.assertIn("unknown backend 'xformers'", self._err(["--cases", "c", "--out", "o",
                                                               "--backends", "xformers"]))

    def _err(self, argv):
        with redirect_stderr(io.StringIO()) as err, self.assertRaises(SystemExit):
            ts.parse_args(argv)
        return err.getvalue()

    def test_pass(self):
        a = ts.parse_args(["--cases", "c", "--out", "o"])
        self.assertEqual(a.passes, ["fwd", "bwd", "fwd_bwd"])
        a = ts.parse_args(["--cases", "c", "--out", "o", "--pass", "bwd, fwd_bwd"])
        self.assertEqual(a.passes, ["bwd", "fwd_bwd"])
        for bad, words in (("bwd,back", "unknown pass 'back'"), (",", "--pass is empty")):
            with redirect_stderr(io.StringIO()), self.assertRaises(SystemExit) as cm:
                ts.parse_args(["--cases", "c", "--out", "o", "--pass", bad])
            self.assertEqual(cm.exception.code, 2)
            self.assertIn(words, self._err(["--cases", "c", "--out", "o", "--pass", bad]))


class CaseFieldsTest(unittest.TestCase):
    def test_dense(self):
        c = make_case(batch=2, heads=8, kv_heads=2, q_len=17, kv_len=100, mask="causal")
        f = ts.case_fields(c)
        self.assertEqual((f["batch"], f["heads"], f["kv_heads"], f["q_len"], f["kv_len"]),
                         (2, 8, 2, 17, 100))
        self.assertEqual(f["mask"], "causal")
        for absent in ("seqlens", "kv_seqlens", "prefix_len", "prefix_lens", "window", "scale"):
            self.assertNotIn(absent, f)
        self.assertEqual(f["key"], c["key"])
        self.assertEqual(f["seed"], 18446744073709551557)

    def test_varlen_sends_lists_not_lengths(self):
        c = make_case(varlen=1, seqlens=[5, 7], kv_seqlens=[6, 9], mask="prefix_lm",
                      prefix_len=4, prefix_lens=[4, 2])
        f = ts.case_fields(c)
        self.assertEqual((f["seqlens"], f["kv_seqlens"], f["prefix_lens"]), ([5, 7], [6, 9], [4, 2]))
        # fabench refuses q_len, kv_len and prefix_len beside these lists
        for absent in ("batch", "q_len", "kv_len", "prefix_len"):
            self.assertNotIn(absent, f)

    def test_prefix_window_scale(self):
        f = ts.case_fields(make_case(mask="prefix_lm", prefix_len=16))
        self.assertEqual(f["prefix_len"], 16)
        f = ts.case_fields(make_case(mask="sliding_window", window=9, prefix_len=0))
        self.assertEqual(f["window"], 9)
        self.assertNotIn("prefix_len", f)
        f = ts.case_fields(make_case(scale=0.3, key="batch=1,...,scale=0.3"))
        self.assertEqual(f["scale"], 0.3)


    def test_pass_only_when_not_fwd(self):
        # fabench's key has ",pass=bwd" for a backward case and no pass for a
        # forward one: the row must rebuild the same key
        self.assertNotIn("pass", ts.case_fields(make_case()))
        self.assertNotIn("pass", ts.case_fields(make_case(**{"pass": "fwd"})))
        for p in ("bwd", "fwd_bwd"):
            self.assertEqual(ts.case_fields(make_case(**{"pass": p}))["pass"], p)
        self.assertEqual(ts.case_pass(make_case()), "fwd")
        self.assertEqual(ts.case_pass(make_case(**{"pass": "bwd"})), "bwd")


class ShapeTest(unittest.TestCase):
    def test_tensor_shapes(self):
        s = ts.Shape(make_case(batch=2, heads=8, kv_heads=2, q_len=3, kv_len=5, head_dim=64,
                               head_dim_v=32))
        self.assertEqual(s.tensor_shape("q"), [2, 3, 8, 64])
        self.assertEqual(s.tensor_shape("k"), [2, 5, 2, 64])
        self.assertEqual(s.tensor_shape("v"), [2, 5, 2, 32])
        self.assertEqual(s.tensor_shape("o"), [2, 3, 8, 32])
        s = ts.Shape(make_case(batch=2, heads=8, kv_heads=2, q_len=3, kv_len=5, layout="bhsd"))
        self.assertEqual(s.tensor_shape("k"), [2, 2, 5, 64])

    def test_varlen(self):
        s = ts.Shape(make_case(varlen=1, seqlens=[5, 7, 1], kv_seqlens=[6, 9, 4], heads=4,
                               kv_heads=1, mask="prefix_lm", prefix_lens=[1, 2, 3]))
        self.assertEqual(s.cu_q, [0, 5, 12, 13])
        self.assertEqual(s.cu_k, [0, 6, 15, 19])
        self.assertEqual(s.seqs, [(5, 6, 1), (7, 9, 2), (1, 4, 3)])
        self.assertEqual(s.tensor_shape("q"), [13, 4, 64])
        self.assertEqual(s.tensor_shape("v"), [19, 1, 64])
        s.layout = "bhsd"
        self.assertEqual(s.tensor_shape("k"), [1, 19, 64])


class MaskTest(unittest.TestCase):
    SIZES = [(1, 1), (1, 9), (4, 4), (5, 9), (9, 5), (16, 3)]

    def test_allows_matches_fabench(self):
        for mask in ("none", "causal", "prefix_lm", "sliding_window"):
            for lq, lk in self.SIZES:
                for prefix in (0, 2, lk):
                    for window in (1, 3, lk + 2):
                        for i in range(lq):
                            for j in range(lk):
                                want = fabench_allows(mask, i, j, lq, lk, prefix, window)
                                got = bool(ts.mask_allows(mask, i, j, lq, lk, prefix, window))
                                self.assertEqual(got, want, (mask, i, j, lq, lk, prefix, window))

    def test_is_full_matches_brute_force(self):
        for mask in ("none", "causal", "prefix_lm", "sliding_window"):
            for lq, lk in self.SIZES:
                for prefix in (0, 2, lk):
                    for window in (1, 3, lk, lk + 2):
                        full = all(fabench_allows(mask, i, j, lq, lk, prefix, window)
                                   for i in range(lq) for j in range(lk))
                        self.assertEqual(ts.mask_is_full(mask, lq, lk, prefix, window), full,
                                         (mask, lq, lk, prefix, window))

    def test_unknown_mask(self):
        with self.assertRaises(ValueError):
            ts.mask_allows("alibi", 0, 0, 1, 1)

    @unittest.skipUnless(HAVE_TORCH, "torch is not installed")
    def test_tensor_mask_equals_scalar_rule(self):
        import torch
        for mask in ("none", "causal", "prefix_lm", "sliding_window"):
            lq, lk = 5, 9
            m = ts.mask_allows(mask, torch.arange(lq).unsqueeze(1), torch.arange(lk).unsqueeze(0),
                               lq, lk, 3, 4)
            for i in range(lq):
                for j in range(lk):
                    self.assertEqual(bool(m[i, j]), fabench_allows(mask, i, j, lq, lk, 3, 4))


class PlanTest(unittest.TestCase):
    def test_square_causal_is_is_causal_everywhere(self):
        c = make_case(mask="causal", q_len=64, kv_len=64)
        for b in ("flash", "cudnn", "efficient", "math"):
            p = ts.plan(c, b)
            self.assertIsNone(p["skip"])
            self.assertEqual(p["modes"], ["is_causal"])
        self.assertEqual(ts.plan(c, "flex")["modes"], ["block"])

    def test_bottom_right_causal(self):
        c = make_case(mask="causal", q_len=16, kv_len=8192)
        self.assertEqual(ts.plan(c, "flash")["modes"], ["lower_right"])
        self.assertIn("causal_lower_right", " ".join(ts.plan(c, "flash")["notes"]))
        for b in ("cudnn", "efficient", "math"):
            p = ts.plan(c, b)
            self.assertEqual(p["modes"], ["explicit"])
            self.assertIn("explicit bottom-right", " ".join(p["notes"]))

    def test_decode_step_needs_no_mask(self):
        c = make_case(mask="causal", q_len=1, kv_len=8192)
        p = ts.plan(c, "flash")
        self.assertEqual(p["modes"], ["none"])
        self.assertIn("without a mask", " ".join(p["notes"]))
        self.assertEqual(ts.plan(c, "flex")["modes"], ["none"])

    def test_flash_skips_masks_it_cannot_take(self):
        for c in (make_case(mask="prefix_lm", prefix_len=16),
                  make_case(mask="sliding_window", window=8)):
            p = ts.plan(c, "flash")
            self.assertIn("takes no attn_mask", p["skip"])
            self.assertIsNone(ts.plan(c, "math")["skip"])
            self.assertEqual(ts.plan(c, "math")["modes"], ["explicit"])
            self.assertEqual(ts.plan(c, "flex")["modes"], ["block"])

    def test_varlen(self):
        c = make_case(varlen=1, seqlens=[4, 4, 3], kv_seqlens=[4, 4, 5], mask="causal")
        p = ts.plan(c, "flash")
        self.assertTrue(p["varlen_loop"])
        self.assertEqual(p["modes"], ["is_causal", "is_causal", "lower_right"])
        self.assertIn("one SDPA call per sequence", " ".join(p["notes"]))
        f = ts.plan(make_case(varlen=1, seqlens=[4, 3], kv_seqlens=[4, 3]), "flex")
        self.assertEqual(f["modes"], ["block", "block"])  # the document mask
        self.assertIn("document mask", " ".join(f["notes"]))

    def test_huge_explicit_mask_is_skipped(self):
        c = make_case(mask="sliding_window", window=128, q_len=1 << 15, kv_len=1 << 15)
        self.assertIn("too large", ts.plan(c, "efficient")["skip"])
        self.assertIsNone(ts.plan(c, "flex")["skip"])


class MeasureTest(unittest.TestCase):
    def test_median(self):
        self.assertEqual(ts.median([3.0, 1.0, 2.0]), 2.0)
        self.assertEqual(ts.median([4.0, 1.0, 2.0, 3.0]), 2.5)
        self.assertTrue(math.isnan(ts.median([])))

    def test_should_stop(self):
        o = Opts(samples=5, min_time_ms=10.0, max_time_ms=100.0, max_samples=50, max_noise=0.01)
        self.assertFalse(ts.should_stop([3.0] * 4, o))          # too few samples
        self.assertFalse(ts.should_stop([1.0] * 6, o))          # too little time
        self.assertTrue(ts.should_stop([2.0] * 6, o))           # converged
        self.assertFalse(ts.should_stop([1.0, 3.0] * 4, o))     # too noisy
        self.assertTrue(ts.should_stop([1.0, 3.0] * 25, o))     # max_samples
        self.assertTrue(ts.should_stop([30.0, 90.0], o))        # max_time_ms

    def test_measure_flushes_before_every_sample(self):
        class FakeTimer(object):
            def __init__(self):
                self.log, self.pending = [], 0

            def flush(self):
                self.log.append("flush")

            def start(self):
                self.log.append("start")

            def stop(self):
                self.log.append("stop")
                self.pending += 1

            def times(self):
                n, self.pending = self.pending, 0
                return [2.5] * n

        calls = []
        t = FakeTimer()
        s = ts.measure(lambda: calls.append(1), t, Opts(warmup=3, samples=5, min_time_ms=20.0))
        self.assertEqual(s, [2.5] * 10)  # one batch of 10: 25 ms, no noise
        self.assertEqual(len(calls), 3 + 10)
        self.assertEqual(t.log, ["flush", "start", "stop"] * 10)

    def test_cuda_timer_with_a_fake_torch(self):
        class Buf(object):
            zeroed = 0
            read = 0

            def zero_(self):
                Buf.zeroed += 1

            def sum(self):
                Buf.read += 1

        class Event(object):
            clock = [0.0]

            def __init__(self, enable_timing):
                assert enable_timing

            def record(self):
                Event.clock[0] += 1.5
                self.t = Event.clock[0]

            def elapsed_time(self, end):
                return end.t - self.t

        class Cuda(object):
            synced = 0

            def Event(self, enable_timing):
                return Event(enable_timing)

            def current_device(self):
                return 0

            def get_device_properties(self, d):
                return type("P", (), {"L2_cache_size": 1 << 20})()

            def synchronize(self):
                Cuda.synced += 1

        class FakeTorch(object):
            int32 = "int32"
            cuda = Cuda()
            sizes = []

            def empty(self, n, dtype, device):
                FakeTorch.sizes.append((n, dtype, device))
                return Buf()

        timer = ts.CudaTimer(FakeTorch(), cold=True)
        self.assertEqual(FakeTorch.sizes, [((2 << 20) // 4, "int32", "cuda")])  # 2x the L2
        for _ in range(3):
            timer.flush()
            timer.start()
            timer.stop()
        self.assertEqual(timer.times(), [1.5, 1.5, 1.5])
        self.assertEqual((Buf.zeroed, Buf.read, Cuda.synced), (3, 0, 1))  # cold: written only
        self.assertEqual(timer.times(), [])
        clean = ts.CudaTimer(FakeTorch(), cold=True, clean=True)
        clean.flush()
        self.assertEqual((Buf.zeroed, Buf.read), (4, 1))  # cold-clean: written, read back


class VerdictTest(unittest.TestCase):
    def test_tolerances(self):
        ok = {"max_abs": 1e-2, "rel_l2": 1e-3, "nan_count": 0, "inf_count": 0}
        self.assertEqual(ts.verdict("fp16", ok), ("pass", None))
        self.assertEqual(ts.verdict("fp32", ok)[0], "fail")
        self.assertIn("max_abs 0.01 > 0.001", ts.verdict("fp32", ok)[1])
        self.assertEqual(ts.verdict("bf16", dict(ok, rel_l2=0.02)),
                         ("fail", "rel_l2 0.02 > 0.016"))
        self.assertEqual(ts.verdict("bf16", dict(ok, nan_count=3))[0], "fail")
        self.assertEqual(ts.verdict("fp16", dict(ok, max_abs=float("nan")))[0], "fail")


class GradVerdictTest(unittest.TestCase):
    def grads(self, **over):
        g = {n: {"max_abs": 1e-3, "rel_l2": 1e-3, "nan_count": 0, "inf_count": 0,
                 "ref_max": 0.5} for n in ts.GRADS}
        for k, v in over.items():
            name, stat = k.split("_", 1)
            g[name][stat] = v
        return g

    def test_tolerance_rule_for_gradients(self):
        o = {"max_abs": 1e-2, "rel_l2": 1e-3, "nan_count": 0, "inf_count": 0}
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads()), ("pass", None))
        self.assertEqual(ts.grad_verdict("bf16", None, self.grads()), ("pass", None))
        # rel_l2: 3 x O's limit (bf16 1.6e-2 -> 4.8e-2)
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads(dk_rel_l2=0.04))[0], "pass")
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads(dk_rel_l2=0.05)),
                         ("fail", "dK: rel_l2 0.05 > 0.048"))
        # max_abs: scaled by the largest reference element when over 1
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads(dv_max_abs=0.2))[0], "fail")
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads(dv_max_abs=0.2,
                                                               dv_ref_max=2.0))[0], "pass")
        self.assertEqual(ts.grad_verdict("bf16", o, self.grads(dv_max_abs=0.3, dv_ref_max=2.0)),
                         ("fail", "dV: max_abs 0.3 > 0.25"))

    def test_every_failing_tensor_is_named(self):
        o = {"max_abs": 1.0, "rel_l2": 1e-3, "nan_count": 0, "inf_count": 0}
        st, why = ts.grad_verdict("fp16", o, self.grads(dq_nan_count=2, dv_max_abs=float("nan")))
        self.assertEqual(st, "fail")
        self.assertEqual(why, "O: max_abs 1 > 0.0156; dQ: 2 NaN and 0 Inf; "
                              "dV: max_abs nan > 0.0156")

    def test_tflops_of_the_pass(self):
        # fabench list's flops are the pass's: 2.5 x the forward's for bwd
        self.assertAlmostEqual(ts.tflops_of({"flops": 2.5e12}, 1000.0), 2.5)
        self.assertIsNone(ts.tflops_of({"flops": 0}, 1.0))
        self.assertIsNone(ts.tflops_of({"flops": 1e9}, None))


class OutputTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def test_header(self):
        h = ts.make_header({"suite": "vit", "path": "suites/vit.yaml", "hash": "ab12", "seed": 1},
                           "NVIDIA H100 80GB HBM3", "2.11.0+cu130", device_arch="sm_90",
                           started_at="2026-11-25T21:40:00Z")
        r = h["run"]
        self.assertEqual(list(h), ["run"])
        self.assertEqual((r["source"], r["backend"], r["suite_name"], r["seed"]),
                         ("torch 2.11.0+cu130", "cuda", "vit", 1))
        self.assertNotIn("runtime", r)  # unknown: left out, not null
        self.assertRegex(ts.utc_now(), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

    def test_rows_and_writer(self):
        c = make_case()
        rows = [ts.result_row(c, "torch_sdpa_flash", "pass", samples=[0.3, 0.1, 0.2],
                              stats={"max_abs": 1e-3, "rel_l2": float("nan"), "nan_count": 0}),
                ts.result_row(c, "torch_sdpa_math", "skip", "out of memory")]
        self.assertEqual(rows[0]["median_ms"], 0.2)
        self.assertEqual((rows[0]["timing"], rows[0]["rule"]), ("cold", "tolerance"))
        self.assertNotIn("median_ms", rows[1])
        path = os.path.join(self.dir, "p.jsonl")
        ts.write_jsonl(path, {"run": {"source": "torch 2.11"}}, rows)
        with open(path) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 3)
        docs = [json.loads(x) for x in lines]  # strict JSON: NaN would not parse back as null
        self.assertEqual(docs[0], {"run": {"source": "torch 2.11"}})
        self.assertIsNone(docs[1]["rel_l2"])
        self.assertEqual(docs[1]["samples"], [0.3, 0.1, 0.2])
        self.assertEqual(docs[1]["seed"], 18446744073709551557)
        self.assertEqual(docs[2]["reason"], "out of memory")
        self.assertNotIn("NaN", "".join(lines))

    def test_bwd_row_carries_each_gradient(self):
        c = make_case(**{"pass": "bwd", "key": "batch=1,...,pass=bwd"})
        g = {n: {"max_abs": 0.001 * (i + 1), "rel_l2": 0.002, "nan_count": 0, "inf_count": 0,
                 "rows_checked": 4, "elems_checked": 256, "ref_max": 3.0}
             for i, n in enumerate(ts.GRADS)}
        row = ts.result_row(c, "torch_sdpa_flash", "pass", samples=[1.0], stats={"max_abs": 1e-3},
                            grads=g)
        self.assertEqual(row["pass"], "bwd")
        self.assertEqual((row["dq_max_abs"], row["dk_max_abs"], row["dv_max_abs"]),
                         (0.001, 0.002, 0.003))
        self.assertEqual((row["dv_rows_checked"], row["dk_elems_checked"]), (4, 256))
        self.assertNotIn("dq_ref_max", row)  # the limit's input, not a statistic fabench takes
        self.assertEqual((row["max_abs"], row["rule"]), (1e-3, "tolerance"))
        self.assertFalse([k for k in row if k.startswith("dq_") and k[3:] not in ts.STAT_FIELDS])

    def test_find_dumps_of_backward_cases(self):
        def touch(name, text=""):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        for i in (1, 2):
            touch("case%04d.json" % i, json.dumps({"index": i, "key": "k%d" % i, "pass": "bwd"}))
            for s in ts.DUMP_FILES + ts.DUMP_BWD_FILES:
                if i == 1 or s != "_ref_kv_rows.npy":
                    touch("case%04d%s" % (i, s))
        # case 2 lacks its key rows: its gradients cannot be checked
        self.assertEqual(ts.find_dumps(self.dir), {"k1": os.path.join(self.dir, "case0001")})

    def test_find_dumps(self):
        def touch(name, text=""):
            with open(os.path.join(self.dir, name), "w") as f:
                f.write(text)
        touch("case0003.json", json.dumps({"index": 3, "key": "k3"}))
        for s in ("_q", "_k", "_v", "_ref", "_ref_rows", "_out_cpu_flash"):
            touch("case0003%s.npy" % s)
        touch("case0004.json", json.dumps({"index": 4, "key": "k4"}))
        touch("case0004_q.npy")  # incomplete: not used
        self.assertEqual(ts.find_dumps(self.dir), {"k3": os.path.join(self.dir, "case0003")})

    def write_npy(self, name, descr, shape, payload, fortran=False):
        header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
            descr, fortran, tuple(shape))
        header += " " * (63 - (10 + len(header)) % 64) + "\n"  # aligned to 64, as numpy does
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) +
                    header.encode("latin1") + payload)
        return path

    def test_read_npy(self):
        data = struct.pack("<6f", *[0.5 * i for i in range(6)])
        descr, shape, raw = ts.read_npy(self.write_npy("a.npy", "<f4", [2, 3], data))
        self.assertEqual((descr, shape, raw), ("<f4", [2, 3], data))
        rows = struct.pack("<3q", 0, 7, 11)
        self.assertEqual(ts.read_npy(self.write_npy("r.npy", "<i8", [3], rows))[2], rows)
        with self.assertRaisesRegex(ts.CaseError, "truncated: 20 of 24 bytes"):
            ts.read_npy(self.write_npy("t.npy", "<f4", [2, 3], data[:20]))
        with self.assertRaisesRegex(ts.CaseError, "Fortran order"):
            ts.read_npy(self.write_npy("f.npy", "<f4", [2, 3], data, fortran=True))
        with self.assertRaisesRegex(ts.CaseError, "holds >f4"):
            ts.read_npy(self.write_npy("b.npy", ">f4", [2, 3], data))
        with self.assertRaisesRegex(ts.CaseError, "not a .npy file"):
            ts.read_npy(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "torch_sdpa.py"))

    def test_load_cases(self):
        path = os.path.join(self.dir, "cases.json")
        with open(path, "w") as f:
            json.dump({"suite": "tiny", "path": "t.yaml", "hash": "h", "seed": 7, "n_cases": 1,
                       "cases": [make_case()]}, f)
        suite, cases = ts.load_cases(path)
        self.assertEqual(suite, {"suite": "tiny", "path": "t.yaml", "hash": "h", "seed": 7})
        self.assertEqual(len(cases), 1)
        with open(path, "w") as f:
            json.dump([1, 2], f)
        with self.assertRaises(ValueError):
            ts.load_cases(path)


if __name__ == "__main__":
    unittest.main(verbosity=1)
