"""ctypes mirror of the structs of runtime/tgrt.h (tgrt_param, tgrt_model) and its enums.

The one mirror the Python checks share (torch_reference.py, loss_scale.py, grad_accum.py,
and remat_check.py through torch_reference): field order and types exactly as in
runtime/tgrt.h. No torch and no numpy here, so numpy-only checks can import it.

check_model() validates a loaded library's tglib_model() against the mirror (every
parameter's rank, shape, numel, dtypes and name index), so a stale mirror fails with a
message instead of reading garbage.
"""
import ctypes

# enum tgrt_dtype
TGRT_F32, TGRT_BF16, TGRT_F16 = 0, 1, 2
DTYPE_NAMES = {TGRT_F32: "f32", TGRT_BF16: "bf16", TGRT_F16: "f16"}

# enum tgrt_precision -> spec name (training.precision)
TGRT_PRECISION_FP32 = 0
TGRT_PRECISION_BF16_MIXED = 1
TGRT_PRECISION_FP16_MIXED = 2
TGRT_PRECISION_BF16 = 3
PRECISIONS = {TGRT_PRECISION_FP32: "fp32", TGRT_PRECISION_BF16_MIXED: "bf16-mixed",
              TGRT_PRECISION_FP16_MIXED: "fp16-mixed", TGRT_PRECISION_BF16: "bf16"}


class TgrtParam(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * 4),
        ("numel", ctypes.c_int64),
        ("offset", ctypes.c_int64),
        ("grad_offset", ctypes.c_int64),
        ("m_offset", ctypes.c_int64),
        ("v_offset", ctypes.c_int64),
        ("init", ctypes.c_int32),
        ("init_std", ctypes.c_float),
        ("weight_decay", ctypes.c_int32),
        ("dtype", ctypes.c_int32),        # enum tgrt_dtype of the value
        ("state_dtype", ctypes.c_int32),  # enum tgrt_dtype of the AdamW moments
        ("owner", ctypes.c_int32),        # ZeRO-1: the rank holding its moments (-1: all)
        ("shard", ctypes.c_int64),        # ZeRO-2/3: elements of each rank's chunk (0: whole)
        ("grad_dtype", ctypes.c_int32),   # enum tgrt_dtype of the gradient slot
        ("work_offset", ctypes.c_int64),  # the working copy's bytes (-1: none)
        ("split", ctypes.c_int32),        # 1: value = working copy + low halves at offset
    ]


class TgrtModel(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("spec_json", ctypes.c_char_p),
        ("n_params", ctypes.c_int32),
        ("params", ctypes.POINTER(TgrtParam)),
        ("persistent_bytes", ctypes.c_int64),
        ("arena_bytes", ctypes.c_int64),
        ("workspace_bytes", ctypes.c_int64),
        ("tokens_offset", ctypes.c_int64),
        ("targets_offset", ctypes.c_int64),
        ("batch_size", ctypes.c_int32),
        ("context", ctypes.c_int32),
        ("vocab_size", ctypes.c_int32),
        ("grad_accum", ctypes.c_int32),
        ("lr", ctypes.c_float),
        ("min_lr", ctypes.c_float),
        ("beta1", ctypes.c_float),
        ("beta2", ctypes.c_float),
        ("eps", ctypes.c_float),
        ("weight_decay", ctypes.c_float),
        ("grad_clip", ctypes.c_float),
        ("warmup_steps", ctypes.c_int32),
        ("decay", ctypes.c_int32),
        ("seed", ctypes.c_int32),
        ("precision", ctypes.c_int32),    # enum tgrt_precision
        ("loss_scale_init", ctypes.c_float),
        ("loss_scale_growth_interval", ctypes.c_int32),
        ("ranks", ctypes.c_int32),  # data-parallel ranks (0: 1)
        ("zero", ctypes.c_int32),   # ZeRO stage
        ("host_bytes", ctypes.c_int64),  # CPU offload: the host region's bytes (0: none)
        ("grads_in_arena", ctypes.c_int32),  # 1: grad_offset is into the arena
    ]


F32P = ctypes.POINTER(ctypes.c_float)
I32P = ctypes.POINTER(ctypes.c_int32)


def check_model(dll):
    """Checks that dll's tglib_model() reads consistently through the mirror: a known
    precision, and for every parameter in order a rank 1..4, numel = product of its shape,
    known dtypes and tglib_param_index(name) = its index (integers first: with a stale
    TgrtParam the array stride is wrong and the name pointer would be garbage). Returns
    the model (TgrtModel); raises AssertionError naming the first inconsistency."""
    dll.tglib_model.restype = ctypes.POINTER(TgrtModel)
    dll.tglib_model.argtypes = []
    dll.tglib_param_index.restype = ctypes.c_int32
    dll.tglib_param_index.argtypes = [ctypes.c_char_p]
    m = dll.tglib_model().contents
    assert m.precision in PRECISIONS, f"tgrt_model.precision = {m.precision}: stale mirror?"
    assert 0 < m.n_params, f"tgrt_model.n_params = {m.n_params}"
    for i in range(m.n_params):
        p = m.params[i]
        where = f"tgrt_param[{i}] (sizeof {ctypes.sizeof(TgrtParam)} in tgrt_abi.py): "
        assert 1 <= p.rank <= 4, where + f"rank {p.rank}"
        n = 1
        for j in range(p.rank):
            n *= p.shape[j]
        assert n == p.numel > 0, where + f"numel {p.numel} != product of shape {list(p.shape)}"
        assert p.dtype in DTYPE_NAMES and p.state_dtype in DTYPE_NAMES, \
            where + f"dtype {p.dtype}, state_dtype {p.state_dtype}"
        idx = dll.tglib_param_index(p.name)
        assert idx == i, where + f"tglib_param_index({p.name!r}) = {idx}"
    return m
