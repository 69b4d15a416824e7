// The cuBLASLt matmul / dense math (engine/cuda/matmul_lt.hpp) against the
// CPU matmul (engine/kernels/matmul) on random inputs. The GPU cases skip,
// saying why, without a GPU; the plan cases (row-major -> column-major
// mapping) run everywhere. The cuDNN cases are in test_cuda_dnn.cpp.
//
// Tolerances (check_close: |gpu - cpu| <= rtol |cpu| + 0.1 rtol max|cpu|):
//  - float32 matmul and conv: rtol 1e-4. Both sides round each product
//    correctly but sum in different orders and blockings, so sums of K terms
//    differ by a few ulps of max|cpu|; 1e-4 leaves room for K up to ~1000.
//  - TF32 matmul: rtol 2e-2 (inputs rounded to 10-bit mantissas, 2^-11 each).
//  - max pooling forward: exact (it selects, never rounds).
//  - average pooling, pooling backward, softmax: rtol 1e-5 (a different
//    summation order or a reciprocal multiply: a few ulps).
#include <doctest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/cudnn_ops.hpp"
#include "engine/cuda/eltwise.hpp"
#include "engine/cuda/matmul_lt.hpp"
#include "engine/kernels/conv.hpp"
#include "engine/kernels/matmul.hpp"
#include "engine/kernels/padding.hpp"
#include "engine/kernels/pool.hpp"
#include "engine/layers/conv2d.hpp"
#include "engine/layers/dense.hpp"
#include "engine/layers/pool2d.hpp"
#include "engine/losses/softmax_rows.hpp"
#include "tests/cuda/blas_dnn_test_util.hpp"
#include "tests/cuda/gpu_test_util.hpp"
#include "tests/engine/layers/layer_test_util.hpp"

namespace dtrain::cuda {
namespace {

using gputest::DeviceArray;
using dtrain::test::check_close;
using dtrain::test::random_tensor;
using namespace blas_dnn_test;
// ---- Runs everywhere: the host arithmetic the GPU paths rely on. ----

TEST_CASE("cuda blas plan: the column-major cuBLASLt problem equals the CPU row-major matmul") {
  // Evaluates the plan with a naive column-major GEMM on the host (a' = our
  // B, b' = our A, as matmul() passes them) and compares with kernels::matmul.
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const kernels::MatmulShape s{7, 5, 9, ta, tb};
      const Tensor a = random_tensor({s.m * s.k}, 1), b = random_tensor({s.k * s.n}, 2);
      Tensor want({s.m, s.n});
      kernels::matmul(s, a.data(), b.data(), nullptr, want.data());
      const LtGemmPlan p = plan_row_major(s);
      CHECK(p.c_rows == s.n);
      CHECK(p.c_cols == s.m);
      Tensor got({s.m, s.n});
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
          double acc = 0.0;
          for (int64_t l = 0; l < p.k; ++l) {
            const float av = p.trans_a ? b[l + i * p.lda] : b[i + l * p.lda];  // op(A')(i, l)
            const float bv = p.trans_b ? a[j + l * p.ldb] : a[l + j * p.ldb];  // op(B')(l, j)
            acc += static_cast<double>(av) * bv;
          }
          got[i + j * p.ldc] = static_cast<float>(acc);
        }
      }
      check_close(got, want, 1e-5, "plan_row_major");
    }
  }
}

TEST_CASE("cuda blas plan: a batch of products becomes strided batches of the same column-major problem") {
  // Evaluates the batched plan on the host: problem i reads A', B' and writes
  // C^T stride_* elements after problem i-1, and must equal kernels::matmul's batch.
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const kernels::MatmulShape s{4, 6, 3, ta, tb, kernels::KType::kF32, kernels::KType::kF32,
                                   kernels::KType::kF32, 5};
      const Tensor a = random_tensor({s.batch * s.m * s.k}, 3), b = random_tensor({s.batch * s.k * s.n}, 4);
      Tensor want({s.batch, s.m, s.n});
      kernels::matmul(s, a.data(), b.data(), nullptr, want.data());
      const LtGemmPlan p = plan_row_major(s);
      CHECK(p.batch == 5);
      CHECK(p.stride_a == s.k * s.n);
      CHECK(p.stride_b == s.m * s.k);
      CHECK(p.stride_c == s.m * s.n);
      Tensor got({s.batch, s.m, s.n});
      for (int64_t q = 0; q < p.batch; ++q) {
        const float* ap = b.data() + q * p.stride_a;  // a' = our B
        const float* bp = a.data() + q * p.stride_b;  // b' = our A
        for (int64_t i = 0; i < p.m; ++i) {
          for (int64_t j = 0; j < p.n; ++j) {
            double acc = 0.0;
            for (int64_t l = 0; l < p.k; ++l) {
              const float av = p.trans_a ? ap[l + i * p.lda] : ap[i + l * p.lda];
              const float bv = p.trans_b ? bp[j + l * p.ldb] : bp[l + j * p.ldb];
              acc += static_cast<double>(av) * bv;
            }
            got[q * p.stride_c + i + j * p.ldc] = static_cast<float>(acc);
          }
        }
      }
      check_close(got, want, 1e-5, "batched plan_row_major");
    }
  }
}

TEST_CASE("cuda blas: matmul equals the CPU matmul for every transpose, with and without bias") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const bool with_bias : {false, true}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(with_bias);
        const kernels::MatmulShape s{67, 45, 129, ta, tb};
        const Tensor a = random_tensor({s.m * s.k}, 11), b = random_tensor({s.k * s.n}, 12);
        const Tensor bias = random_tensor({s.n}, 13);
        Tensor want({s.m, s.n});
        kernels::matmul(s, a.data(), b.data(), with_bias ? bias.data() : nullptr, want.data());
        DeviceArray da(a), db(b), dbias(bias), dc(s.m * s.n);
        require_ok(matmul(dev, s, da.data(), db.data(), with_bias ? dbias.data() : nullptr, dc.data(),
                          with_bias ? Epilogue::kBias : Epilogue::kNone, MathMode::kFloat32));
        check_close(from_gpu(dc, {s.m, s.n}), want, kMatmulRtol, "matmul");
      }
    }
  }
}

TEST_CASE("cuda blas: a strided batch of products equals the CPU batched matmul, bias and relu included") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      for (const Epilogue e : {Epilogue::kNone, Epilogue::kBias, Epilogue::kBiasRelu}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(static_cast<int>(e));
        // Attention's shapes: (batch * heads) products of (T, d) x (d, T).
        const kernels::MatmulShape s{33, 17, 24, ta, tb, kernels::KType::kF32, kernels::KType::kF32,
                                     kernels::KType::kF32, 6};
        const Tensor a = random_tensor({s.batch * s.m * s.k}, 31), b = random_tensor({s.batch * s.k * s.n}, 32);
        const Tensor bias = random_tensor({s.n}, 33);
        const bool with_bias = e != Epilogue::kNone;
        Tensor want({s.batch, s.m, s.n});
        kernels::matmul(s, a.data(), b.data(), with_bias ? bias.data() : nullptr, want.data());
        if (e == Epilogue::kBiasRelu) {
          for (int64_t i = 0; i < want.numel(); ++i) want[i] = want[i] > 0.0f ? want[i] : 0.0f;
        }
        DeviceArray da(a), db(b), dbias(bias), dc(s.batch * s.m * s.n);
        require_ok(matmul(dev, s, da.data(), db.data(), with_bias ? dbias.data() : nullptr, dc.data(), e,
                          MathMode::kFloat32));
        check_close(from_gpu(dc, {s.batch, s.m, s.n}), want, kMatmulRtol, "batched matmul");
      }
    }
  }
}

TEST_CASE("cuda blas: dense forward (bias + relu epilogue) and backward equal the CPU math") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  const DenseShape s{64, 100, 37};
  const Tensor x = random_tensor({s.batch, s.in}, 21), w = random_tensor({s.in, s.units}, 22, 0.1f);
  const Tensor b = random_tensor({s.units}, 23), dy = random_tensor({s.batch, s.units}, 24);
  DeviceArray dx_in(x), dw_in(w), db_in(b), ddy(dy);

  Tensor y({s.batch, s.units});
  kernels::matmul({s.batch, s.units, s.in, false, false}, x.data(), w.data(), b.data(), y.data());
  Tensor y_relu = y;
  for (int64_t i = 0; i < y_relu.numel(); ++i) y_relu[i] = y_relu[i] > 0.0f ? y_relu[i] : 0.0f;
  for (const bool relu : {false, true}) {
    CAPTURE(relu);
    DeviceArray dyout(s.batch * s.units);
    require_ok(dense_forward(dev, s, dx_in.data(), dw_in.data(), db_in.data(), relu, dyout.data(), MathMode::kFloat32));
    check_close(from_gpu(dyout, {s.batch, s.units}), relu ? y_relu : y, kMatmulRtol, "dense forward");
  }

  Tensor dx_want({s.batch, s.in});
  kernels::matmul({s.batch, s.in, s.units, false, true}, dy.data(), w.data(), nullptr, dx_want.data());
  DeviceArray ddx(s.batch * s.in);
  require_ok(dense_backward_data(dev, s, ddy.data(), dw_in.data(), ddx.data(), MathMode::kFloat32));
  check_close(from_gpu(ddx, {s.batch, s.in}), dx_want, kMatmulRtol, "dense dx");

  Tensor dw_want({s.in, s.units}), db_want({s.units});
  kernels::matmul({s.in, s.units, s.batch, true, false}, x.data(), dy.data(), nullptr, dw_want.data());
  for (int64_t j = 0; j < s.units; ++j) {
    double acc = 0.0;
    for (int64_t r = 0; r < s.batch; ++r) acc += dy[r * s.units + j];
    db_want[j] = static_cast<float>(acc);
  }
  DeviceArray ddw(s.in * s.units), ddb(s.units);
  require_ok(dense_backward_weights(dev, s, dx_in.data(), ddy.data(), ddw.data(), ddb.data(), MathMode::kFloat32));
  check_close(from_gpu(ddw, {s.in, s.units}), dw_want, kMatmulRtol, "dense dw");
  check_close(from_gpu(ddb, {s.units}), db_want, kMatmulRtol, "dense db");
  // Without db: dw alone.
  DeviceArray ddw2(s.in * s.units);
  require_ok(dense_backward_weights(dev, s, dx_in.data(), ddy.data(), ddw2.data(), nullptr, MathMode::kFloat32));
  check_close(from_gpu(ddw2, {s.in, s.units}), dw_want, kMatmulRtol, "dense dw without db");
}

// db one float past a 256-byte boundary (4-byte aligned only), x and dy
// likewise: whether or not cuBLASLt's BGRADA epilogue takes such operands,
// dw and db equal the CPU's, on the first call and on warm calls (the plan,
// or the remembered fallback, reused), bit for bit between warm calls.
TEST_CASE("cuda blas: dense backward weights with misaligned operands equals the CPU, first call and warm") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  const DenseShape s{48, 30, 21};
  const Tensor x = random_tensor({s.batch, s.in}, 61), dy = random_tensor({s.batch, s.units}, 62);
  std::vector<float> x_off(1, 0.0f), dy_off(1, 0.0f);
  x_off.insert(x_off.end(), x.data(), x.data() + x.numel());
  dy_off.insert(dy_off.end(), dy.data(), dy.data() + dy.numel());
  DeviceArray gx(x_off), gdy(dy_off);
  Tensor dw_want({s.in, s.units}), db_want({s.units});
  kernels::matmul({s.in, s.units, s.batch, true, false}, x.data(), dy.data(), nullptr, dw_want.data());
  for (int64_t j = 0; j < s.units; ++j) {
    double acc = 0.0;
    for (int64_t r = 0; r < s.batch; ++r) acc += dy[r * s.units + j];
    db_want[j] = static_cast<float>(acc);
  }
  std::vector<std::vector<float>> dws, dbs;
  for (int call = 0; call < 3; ++call) {
    CAPTURE(call);
    DeviceArray gdw(s.in * s.units + 1), gdb(s.units + 1);
    require_ok(dense_backward_weights(dev, s, gx.data() + 1, gdy.data() + 1, gdw.data() + 1, gdb.data() + 1,
                                      MathMode::kFloat32));
    const std::vector<float> dw_all = gdw.download(), db_all = gdb.download();
    dws.emplace_back(dw_all.begin() + 1, dw_all.end());
    dbs.emplace_back(db_all.begin() + 1, db_all.end());
    check_close(Tensor::from({s.in, s.units}, dws.back()), dw_want, kMatmulRtol, "misaligned dense dw");
    check_close(Tensor::from({s.units}, dbs.back()), db_want, kMatmulRtol, "misaligned dense db");
  }
  CHECK(gputest::same_bits(dws[1], dws[2]));
  CHECK(gputest::same_bits(dbs[1], dbs[2]));
}

TEST_CASE("cuda blas: TF32 matmul stays within TF32 rounding of the CPU") {
  DTRAIN_SKIP_WITHOUT_GPU();
  const kernels::MatmulShape s{128, 96, 256, false, false};
  const Tensor a = random_tensor({s.m * s.k}, 31), b = random_tensor({s.k * s.n}, 32);
  Tensor want({s.m, s.n});
  kernels::matmul(s, a.data(), b.data(), nullptr, want.data());
  DeviceArray da(a), db(b), dc(s.m * s.n);
  require_ok(matmul(gputest::gpu0(), s, da.data(), db.data(), nullptr, dc.data(), Epilogue::kNone, MathMode::kTf32));
  check_close(from_gpu(dc, {s.m, s.n}), want, kTf32Rtol, "tf32 matmul");
}

}  // namespace
}  // namespace dtrain::cuda
