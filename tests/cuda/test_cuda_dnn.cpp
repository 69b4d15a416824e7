// The cuDNN conv2d, pooling and softmax (engine/cuda/cudnn_ops.hpp) against
// their CPU counterparts (engine/kernels conv, pool; softmax_last_dim), and the
// dense, conv2d and max-pool layers against their GPU composition, on random
// inputs (tolerances: test_cuda_blas.cpp). The GPU cases skip, saying why,
// without a GPU; the padding-plan cases run everywhere.
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

TEST_CASE("cuda dnn plan: conv padding goes to cuDNN when symmetric, else into an explicitly padded input") {
  const kernels::Conv2dShape sym = conv_shape(2, 8, 8, 3, 4, 3, 1, 1, true, false);
  const ConvPadPlan ps = conv_pad_plan(sym);
  CHECK_FALSE(ps.explicit_pad);
  CHECK(ps.pad_h == 1);
  CHECK(ps.pad_w == 1);
  CHECK(ps.padded_h == 8);
  // SAME, stride 2 on an even input: pad 0 above, 1 below.
  const kernels::Conv2dShape asym = conv_shape(2, 8, 6, 3, 4, 3, 2, 1, true, false);
  REQUIRE(asym.pad_top == 0);
  REQUIRE(asym.pad_bottom == 1);
  const ConvPadPlan pa = conv_pad_plan(asym);
  CHECK(pa.explicit_pad);
  CHECK(pa.pad_h == 0);
  CHECK(pa.pad_w == 0);
  CHECK(pa.padded_h == 9);
  CHECK(pa.padded_w == 7);
  // The plan's meaning, on the CPU: the unpadded convolution of the
  // zero-padded input equals the asymmetric one (tolerance 1e-5: same kernel,
  // only the padding differs).
  const Tensor x = random_tensor({asym.n, asym.ih, asym.iw, asym.ic}, 5);
  const Tensor w = random_tensor({asym.kh, asym.kw, asym.ic, asym.oc}, 6);
  Tensor xp({asym.n, pa.padded_h, pa.padded_w, asym.ic});
  for (int64_t n = 0; n < asym.n; ++n)
    for (int64_t h = 0; h < asym.ih; ++h)
      for (int64_t c = 0; c < asym.iw * asym.ic; ++c)
        xp[((n * pa.padded_h + h + asym.pad_top) * pa.padded_w + asym.pad_left) * asym.ic + c] =
            x[(n * asym.ih + h) * asym.iw * asym.ic + c];
  kernels::Conv2dShape unpadded = asym;
  unpadded.ih = pa.padded_h, unpadded.iw = pa.padded_w;
  unpadded.pad_top = unpadded.pad_bottom = unpadded.pad_left = unpadded.pad_right = 0;
  Tensor want({asym.n, asym.oh, asym.ow, asym.oc}), got({asym.n, asym.oh, asym.ow, asym.oc});
  kernels::conv2d_forward(asym, x.data(), w.data(), nullptr, want.data());
  kernels::conv2d_forward(unpadded, xp.data(), w.data(), nullptr, got.data());
  check_close(got, want, 1e-5, "explicitly padded conv");
}

TEST_CASE("cuda dnn plan: pooling padding cuDNN can express") {
  using kernels::PoolKind;
  const PoolPadPlan valid = pool_pad_plan(pool_shape(PoolKind::kMax, 1, 28, 28, 1, 2, 2, false));
  CHECK(valid.supported);
  CHECK(valid.pad_h == 0);
  const PoolPadPlan same_sym = pool_pad_plan(pool_shape(PoolKind::kAvg, 1, 28, 28, 1, 3, 1, true));
  CHECK(same_sym.supported);
  CHECK(same_sym.pad_h == 1);
  CHECK(same_sym.pad_w == 1);
  // SAME 3x3 stride 2 on 32: pads 0 / 1 and 16 outputs; top pad 0 gives 15.
  CHECK_FALSE(pool_pad_plan(pool_shape(PoolKind::kMax, 1, 32, 32, 1, 3, 2, true)).supported);
}

// ---- Needs a GPU. ----

TEST_CASE("cuda dnn: conv2d forward, backward data and backward weights equal the CPU conv") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  struct Case {
    const char* name;
    kernels::Conv2dShape s;
  };
  const Case cases[] = {
      {"same 3x3 stride 1 (symmetric pad), relu", conv_shape(4, 12, 10, 3, 8, 3, 1, 1, true, true)},
      {"same 3x3 stride 2 on even input (asymmetric pad)", conv_shape(3, 14, 16, 5, 6, 3, 2, 1, true, false)},
      {"same 2x2 stride 1 (pad only below/right)", conv_shape(2, 9, 7, 4, 5, 2, 1, 1, true, false)},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    const kernels::Conv2dShape& s = c.s;
    const Shape xs{s.n, s.ih, s.iw, s.ic}, ws{s.kh, s.kw, s.ic, s.oc}, ys{s.n, s.oh, s.ow, s.oc};
    const Tensor x = random_tensor(xs, 41), w = random_tensor(ws, 42, 0.2f), bias = random_tensor({s.oc}, 43);
    const Tensor dy = random_tensor(ys, 44);
    DeviceArray gx(x), gw(w), gb(bias), gdy(dy);

    Tensor y(ys);
    kernels::conv2d_forward(s, x.data(), w.data(), bias.data(), y.data());
    DeviceArray gy(y.numel());
    require_ok(conv2d_forward(dev, s, gx.data(), gw.data(), gb.data(), gy.data(), kFma));
    check_close(from_gpu(gy, ys), y, kConvRtol, "conv2d forward");

    Tensor dx(xs);
    kernels::conv2d_backward_data(s, dy.data(), w.data(), dx.data());
    DeviceArray gdx(x.numel());
    require_ok(conv2d_backward_data(dev, s, gdy.data(), gw.data(), gdx.data(), kFma));
    check_close(from_gpu(gdx, xs), dx, kConvRtol, "conv2d backward data");

    Tensor dw(ws), db({s.oc});
    kernels::conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), db.data());
    DeviceArray gdw(w.numel()), gdb(s.oc);
    require_ok(conv2d_backward_weights(dev, s, gx.data(), gdy.data(), gdw.data(), gdb.data(), kFma));
    check_close(from_gpu(gdw, ws), dw, kConvRtol, "conv2d backward weights");
    check_close(from_gpu(gdb, {s.oc}), db, kConvRtol, "conv2d backward bias");
  }
}

// The support table refuses conv2d_dilated on GPUs (cuDNN may offer no NHWC
// float32 FMA-math algorithm for a dilated convolution). This probe says what
// cuDNN does with one: equal to the CPU, or refused with cuDNN's own words,
// never a wrong result. Its MESSAGE is how a GPU run tells whether the
// refusal can be lifted.
TEST_CASE("cuda dnn: a dilated conv equals the CPU conv or is refused as having no FMA algorithm") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  const kernels::Conv2dShape s = conv_shape(2, 17, 15, 3, 7, 5, 1, 2, false, false);
  const Shape xs{s.n, s.ih, s.iw, s.ic}, ws{s.kh, s.kw, s.ic, s.oc}, ys{s.n, s.oh, s.ow, s.oc};
  const Tensor x = random_tensor(xs, 41), w = random_tensor(ws, 42, 0.2f), bias = random_tensor({s.oc}, 43);
  const Tensor dy = random_tensor(ys, 44);
  DeviceArray gx(x), gw(w), gb(bias), gdy(dy);
  const auto refused_or_ok = [](const Status& st, const char* what) {
    if (st.ok()) return true;
    MESSAGE(what << " of a dilated conv refused: " << st.error().message);
    CHECK(st.error().message.find("algorithm with float32 (FMA) math for this convolution") != std::string::npos);
    return false;
  };
  Tensor y(ys);
  kernels::conv2d_forward(s, x.data(), w.data(), bias.data(), y.data());
  DeviceArray gy(y.numel());
  if (refused_or_ok(conv2d_forward(dev, s, gx.data(), gw.data(), gb.data(), gy.data(), kFma), "forward")) {
    check_close(from_gpu(gy, ys), y, kConvRtol, "dilated conv2d forward");
  }
  Tensor dx(xs);
  kernels::conv2d_backward_data(s, dy.data(), w.data(), dx.data());
  DeviceArray gdx(x.numel());
  if (refused_or_ok(conv2d_backward_data(dev, s, gdy.data(), gw.data(), gdx.data(), kFma), "backward data")) {
    check_close(from_gpu(gdx, xs), dx, kConvRtol, "dilated conv2d backward data");
  }
  Tensor dw(ws), db({s.oc});
  kernels::conv2d_backward_weights(s, x.data(), dy.data(), dw.data(), db.data());
  DeviceArray gdw(w.numel()), gdb(s.oc);
  if (refused_or_ok(conv2d_backward_weights(dev, s, gx.data(), gdy.data(), gdw.data(), gdb.data(), kFma),
                    "backward weights")) {
    check_close(from_gpu(gdw, ws), dw, kConvRtol, "dilated conv2d backward weights");
    check_close(from_gpu(gdb, {s.oc}), db, kConvRtol, "dilated conv2d backward bias");
  }
  for (const std::string& line : conv_algorithm_notes()) {
    if (line.find("dilation 2x2") != std::string::npos) MESSAGE(line);
  }
}

TEST_CASE("cuda dnn plan: the algorithm choice keeps FMA math for float32 and prefers deterministic ones when asked") {
  // cuDNN's ranking, best first: a failing one, a TF32 one, a fast one with
  // atomics, then a deterministic FMA one.
  const ConvAlgoCandidate ranked[] = {
      {false, false, true}, {true, true, true}, {true, false, false}, {true, false, true}};
  const ConvAlgoPick fast = pick_conv_algorithm(ranked, ConvPolicy{MathMode::kFloat32, false});
  CHECK(fast.index == 2);
  CHECK_FALSE(fast.deterministic);
  const ConvAlgoPick det = pick_conv_algorithm(ranked, ConvPolicy{MathMode::kFloat32, true});
  CHECK(det.index == 3);
  CHECK(det.deterministic);
  const ConvAlgoPick tf32 = pick_conv_algorithm(ranked, ConvPolicy{MathMode::kTf32, false});
  CHECK(tf32.index == 1);
  CHECK(tf32.deterministic);
  // No deterministic FMA algorithm: the best FMA one, said to be non-deterministic.
  const ConvAlgoCandidate no_det[] = {{true, true, true}, {true, false, false}};
  const ConvAlgoPick fallback = pick_conv_algorithm(no_det, ConvPolicy{MathMode::kFloat32, true});
  CHECK(fallback.index == 1);
  CHECK_FALSE(fallback.deterministic);
  // Nothing allowed: none.
  const ConvAlgoCandidate only_tf32[] = {{true, true, true}, {false, false, true}};
  CHECK(pick_conv_algorithm(only_tf32, ConvPolicy{MathMode::kFloat32, true}).index == -1);
  CHECK(pick_conv_algorithm({}, ConvPolicy{}).index == -1);
}

TEST_CASE("cuda dnn: under the deterministic policy a convolution's gradients are the same bits every time, and the "
          "algorithms are named") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  const kernels::Conv2dShape s = conv_shape(32, 14, 14, 16, 32, 3, 1, 1, true, false);
  const Shape xs{s.n, s.ih, s.iw, s.ic}, ws{s.kh, s.kw, s.ic, s.oc}, ys{s.n, s.oh, s.ow, s.oc};
  const Tensor x = random_tensor(xs, 51), w = random_tensor(ws, 52, 0.2f), dy = random_tensor(ys, 53);
  DeviceArray gx(x), gw(w), gdy(dy);
  const ConvPolicy det{MathMode::kFloat32, true};
  std::vector<Tensor> dws, dxs;
  for (int run = 0; run < 3; ++run) {
    DeviceArray gdw(w.numel()), gdb(s.oc), gdx(x.numel());
    require_ok(conv2d_backward_weights(dev, s, gx.data(), gdy.data(), gdw.data(), gdb.data(), det));
    require_ok(conv2d_backward_data(dev, s, gdy.data(), gw.data(), gdx.data(), det));
    dws.push_back(from_gpu(gdw, ws));
    dxs.push_back(from_gpu(gdx, xs));
  }
  for (int run = 1; run < 3; ++run) {
    CHECK(std::memcmp(dws[0].data(), dws[run].data(), dws[0].numel() * sizeof(float)) == 0);
    CHECK(std::memcmp(dxs[0].data(), dxs[run].data(), dxs[0].numel() * sizeof(float)) == 0);
  }
  const std::string shape = "cuDNN conv2d 32x14x14x16 -> 32x14x14x32, kernel 3x3, strides 1x1, dilation 1x1: ";
  int named = 0;
  for (const std::string& line : conv_algorithm_notes()) {
    MESSAGE(line);
    if (line.rfind(shape + "backward-filter CUDNN_CONVOLUTION_BWD_FILTER_ALGO_", 0) == 0 ||
        line.rfind(shape + "backward-data CUDNN_CONVOLUTION_BWD_DATA_ALGO_", 0) == 0) {
      ++named;
      CHECK(line.find("(deterministic, FMA math)") != std::string::npos);
    }
  }
  CHECK(named == 2);
}

TEST_CASE("cuda dnn: max and average pooling forward and backward equal the CPU pooling") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  using kernels::PoolKind;
  const kernels::Pool2dShape cases[] = {
      pool_shape(PoolKind::kMax, 3, 12, 10, 5, 2, 2, false),
      pool_shape(PoolKind::kMax, 2, 9, 11, 4, 3, 1, true),
      pool_shape(PoolKind::kAvg, 3, 12, 10, 5, 2, 2, false),
      pool_shape(PoolKind::kAvg, 2, 9, 11, 4, 3, 1, true),
  };
  for (const kernels::Pool2dShape& s : cases) {
    CAPTURE(s.kind == PoolKind::kMax);
    CAPTURE(s.kh);
    const Shape xs{s.n, s.ih, s.iw, s.c}, ys{s.n, s.oh, s.ow, s.c};
    // Distinct values: no ties, so both sides pick the same max.
    const Tensor x = dtrain::test::distinct_tensor(xs, 51), dy = random_tensor(ys, 52);
    std::vector<std::max_align_t> workspace(kernels::pool2d_workspace_bytes(s) / sizeof(std::max_align_t) + 1);
    Tensor y(ys), dx(xs);
    kernels::pool2d_forward(s, x.data(), y.data(), workspace.data());
    kernels::pool2d_backward(s, dy.data(), dx.data(), workspace.data());

    DeviceArray gx(x), gy(y.numel()), gdy(dy), gdx(x.numel());
    require_ok(pool2d_forward(dev, s, gx.data(), gy.data()));
    const std::vector<float> got_y = gy.download();
    if (s.kind == PoolKind::kMax) {
      CHECK_MESSAGE(gputest::same_bits(got_y, y.to_vector()), "max pooling forward differs from the CPU");
    } else {
      check_close(Tensor::from(ys, got_y), y, kAvgPoolRtol, "avg pooling forward");
    }
    require_ok(pool2d_backward(dev, s, gx.data(), gy.data(), gdy.data(), gdx.data()));
    check_close(from_gpu(gdx, xs), dx, kPoolBackwardRtol, "pooling backward");
  }
}

TEST_CASE("cuda dnn: pooling padding cuDNN cannot express fails loudly") {
  DTRAIN_SKIP_WITHOUT_GPU();
  const kernels::Pool2dShape s = pool_shape(kernels::PoolKind::kMax, 1, 32, 32, 1, 3, 2, true);
  DeviceArray x(32 * 32), y(s.oh * s.ow);
  const Status st = pool2d_forward(gputest::gpu0(), s, x.data(), y.data());
  REQUIRE_FALSE(st.ok());
  CHECK(st.error().message ==
        "pool2d on the GPU: padding top 0 bottom 1, left 0 right 1 pads more after the input than before, which "
        "cuDNN's pooling (one pad per side pair) cannot place; such a pooling runs on the CPU only (the support "
        "table refuses pool2d_pad_after on GPUs)");
}

TEST_CASE("cuda dnn: softmax forward equals the CPU softmax of the losses") {
  DTRAIN_SKIP_WITHOUT_GPU();
  for (const int64_t cols : {int64_t{10}, int64_t{1000}}) {
    CAPTURE(cols);
    const int64_t rows = 77;
    const Tensor logits = random_tensor({rows, cols}, 61, 4.0f);
    const Tensor want = softmax_last_dim(logits);
    DeviceArray gx(logits), gy(rows * cols);
    require_ok(softmax_forward(gputest::gpu0(), rows, cols, gx.data(), gy.data()));
    check_close(from_gpu(gy, {rows, cols}), want, kSoftmaxRtol, "softmax");
  }
}

// The layers' own forward and backward (shapes from build(), params from
// make_params) against the GPU calls a GPU layer would make: catches a
// mismatch of layouts or padding between the layer and the wrapper.
TEST_CASE("cuda blas/dnn: the dense, conv2d (fused relu) and max-pool layers equal their GPU composition") {
  DTRAIN_SKIP_WITHOUT_GPU();
  GpuDevice& dev = gputest::gpu0();
  const cudaStream_t stream = dev.compute.get();

  SUBCASE("dense") {
    Dense layer(29, true, InitializerSpec{}, InitializerSpec{"zeros", 0.0f});
    REQUIRE(layer.build({41}).ok());
    std::vector<Tensor> params = dtrain::test::make_params(layer, 71);
    params[1] = random_tensor({29}, 72);
    const DenseShape s{33, 41, 29};
    const Tensor x = random_tensor({s.batch, s.in}, 73), dy = random_tensor({s.batch, s.units}, 74);
    Tensor y;
    LayerCache cache;
    layer.forward({}, params, x, y, cache);
    std::vector<Tensor> grads{Tensor(params[0].shape()), Tensor(params[1].shape())};
    Tensor dx(x.shape());
    layer.backward({}, params, grads, x, y, dy, &dx, cache);

    DeviceArray gx(x), gw(params[0]), gb(params[1]), gdy(dy), gy(y.numel()), gdx(x.numel()), gdw(params[0].numel()),
        gdb(s.units);
    require_ok(dense_forward(dev, s, gx.data(), gw.data(), gb.data(), false, gy.data(), MathMode::kFloat32));
    require_ok(dense_backward_data(dev, s, gdy.data(), gw.data(), gdx.data(), MathMode::kFloat32));
    require_ok(dense_backward_weights(dev, s, gx.data(), gdy.data(), gdw.data(), gdb.data(), MathMode::kFloat32));
    check_close(from_gpu(gy, y.shape()), y, kMatmulRtol, "dense layer y");
    check_close(from_gpu(gdx, x.shape()), dx, kMatmulRtol, "dense layer dx");
    check_close(from_gpu(gdw, grads[0].shape()), grads[0], kMatmulRtol, "dense layer dkernel");
    check_close(from_gpu(gdb, grads[1].shape()), grads[1], kMatmulRtol, "dense layer dbias");
  }

  SUBCASE("conv2d, SAME, stride 2, fused relu") {
    Conv2dOptions o;
    o.filters = 6;
    o.kernel = {3, 3};
    o.strides = {2, 2};
    o.same = true;
    Conv2D layer(o);
    REQUIRE(layer.fuse_activation("relu"));
    REQUIRE(layer.build({14, 12, 4}).ok());
    std::vector<Tensor> params = dtrain::test::make_params(layer, 81);
    params[1] = random_tensor({6}, 82);
    const kernels::Conv2dShape s = conv_shape(3, 14, 12, 4, 6, 3, 2, 1, true, true);
    const Tensor x = random_tensor({s.n, s.ih, s.iw, s.ic}, 83), dy = random_tensor({s.n, s.oh, s.ow, s.oc}, 84);
    Tensor y;
    LayerCache cache;
    layer.forward({}, params, x, y, cache);
    REQUIRE(y.shape() == Shape{s.n, s.oh, s.ow, s.oc});
    std::vector<Tensor> grads{Tensor(params[0].shape()), Tensor(params[1].shape())};
    Tensor dx(x.shape());
    layer.backward({}, params, grads, x, y, dy, &dx, cache);

    DeviceArray gx(x), gw(params[0]), gb(params[1]), gdy(dy), gy(y.numel()), gdx(x.numel()), gdw(params[0].numel()),
        gdb(s.oc);
    require_ok(conv2d_forward(dev, s, gx.data(), gw.data(), gb.data(), gy.data(), kFma));
    // The fused relu's backward: dy masked by y > 0 (the layer's rule), then the conv.
    require_ok(relu_backward(gy.data(), gdy.data(), gdy.data(), dy.numel(), stream));
    require_ok(conv2d_backward_data(dev, s, gdy.data(), gw.data(), gdx.data(), kFma));
    require_ok(conv2d_backward_weights(dev, s, gx.data(), gdy.data(), gdw.data(), gdb.data(), kFma));
    check_close(from_gpu(gy, y.shape()), y, kConvRtol, "conv2d layer y");
    check_close(from_gpu(gdx, x.shape()), dx, kConvRtol, "conv2d layer dx");
    check_close(from_gpu(gdw, grads[0].shape()), grads[0], kConvRtol, "conv2d layer dkernel");
    check_close(from_gpu(gdb, grads[1].shape()), grads[1], kConvRtol, "conv2d layer dbias");
  }

  SUBCASE("max_pool2d, 2x2 stride 2") {
    Pool2D layer({kernels::PoolKind::kMax, {2, 2}, {2, 2}, false});
    REQUIRE(layer.build({10, 8, 3}).ok());
    const kernels::Pool2dShape s = pool_shape(kernels::PoolKind::kMax, 2, 10, 8, 3, 2, 2, false);
    const Tensor x = dtrain::test::distinct_tensor({s.n, s.ih, s.iw, s.c}, 91);
    const Tensor dy = random_tensor({s.n, s.oh, s.ow, s.c}, 92);
    Tensor y;
    LayerCache cache;
    std::vector<Tensor> no_params, no_grads;
    layer.forward({}, no_params, x, y, cache);
    Tensor dx(x.shape());
    layer.backward({}, no_params, no_grads, x, y, dy, &dx, cache);

    DeviceArray gx(x), gy(y.numel()), gdy(dy), gdx(x.numel());
    require_ok(pool2d_forward(dev, s, gx.data(), gy.data()));
    require_ok(pool2d_backward(dev, s, gx.data(), gy.data(), gdy.data(), gdx.data()));
    CHECK_MESSAGE(gputest::same_bits(gy.download(), y.to_vector()), "max_pool2d layer y differs");
    check_close(from_gpu(gdx, x.shape()), dx, kPoolBackwardRtol, "max_pool2d layer dx");
  }
}

}  // namespace
}  // namespace dtrain::cuda
