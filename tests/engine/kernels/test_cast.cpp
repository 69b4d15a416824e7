// f32 <-> bf16 casts: the scalar helpers on exact rounding cases (ties to
// even, overflow, NaN, inf, denormals), and the bulk casts bit for bit
// against the scalar helpers.
#include <doctest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/kernels/cast.hpp"

namespace dtrain::kernels {
namespace {

float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST_CASE("kernels::float_to_bf16 rounds to nearest, ties to even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  CHECK(float_to_bf16(-2.0f) == 0xc000);
  CHECK(float_to_bf16(0.0f) == 0x0000);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  // 1 + 2^-8 lies halfway between 1 (mantissa ...0, even) and 1 + 2^-7.
  CHECK(float_to_bf16(1.0f + 0x1p-8f) == 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
  CHECK(float_to_bf16(1.0f + 3 * 0x1p-8f) == 0x3f82);
  CHECK(float_to_bf16(-(1.0f + 3 * 0x1p-8f)) == 0xbf82);
  // Just above / below a tie.
  CHECK(float_to_bf16(from_bits(0x3f808001)) == 0x3f81);
  CHECK(float_to_bf16(from_bits(0x3f807fff)) == 0x3f80);
  // A carry out of the mantissa bumps the exponent: 2 - 2^-23 -> 2.
  CHECK(float_to_bf16(from_bits(0x3fffffff)) == 0x4000);
}

TEST_CASE("kernels::float_to_bf16 keeps inf and NaN, overflows to inf") {
  constexpr float inf = std::numeric_limits<float>::infinity();
  CHECK(float_to_bf16(inf) == 0x7f80);
  CHECK(float_to_bf16(-inf) == 0xff80);
  // The largest float rounds past bf16's largest (0x7f7f) to inf; one just
  // below the tie stays finite.
  CHECK(float_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(float_to_bf16(from_bits(0x7f7f7fff)) == 0x7f7f);
  CHECK(float_to_bf16(from_bits(0xff7fffff)) == 0xff80);
  // Quiet and signalling NaNs, either sign, stay (quiet) NaN; a naive
  // rounding add would turn 0x7f800001 into inf and 0x7fffffff into 0x8000.
  CHECK(float_to_bf16(from_bits(0x7fc00000)) == 0x7fc0);
  CHECK(float_to_bf16(from_bits(0xffc00000)) == 0xffc0);
  CHECK(float_to_bf16(from_bits(0x7f800001)) == 0x7fc0);
  CHECK(float_to_bf16(from_bits(0x7fffffff)) == 0x7fff);
  for (uint32_t u : {0x7f800001u, 0x7fbfffffu, 0x7fc00001u, 0x7fffffffu, 0xff800001u, 0xffffffffu}) {
    CAPTURE(u);
    CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(u)))));
  }
}

TEST_CASE("kernels::float_to_bf16 rounds denormals instead of flushing them") {
  CHECK(float_to_bf16(from_bits(0x00000001)) == 0x0000);  // smallest float denormal
  CHECK(float_to_bf16(from_bits(0x00008000)) == 0x0000);  // tie, to even (0)
  CHECK(float_to_bf16(from_bits(0x00008001)) == 0x0001);
  CHECK(float_to_bf16(from_bits(0x00010000)) == 0x0001);  // smallest bf16 denormal, exact
  CHECK(float_to_bf16(from_bits(0x00018000)) == 0x0002);  // tie, to even (2)
  CHECK(float_to_bf16(from_bits(0x80018000)) == 0x8002);
  CHECK(float_to_bf16(from_bits(0x007fffff)) == 0x0080);  // largest denormal -> smallest normal
  CHECK(bf16_to_float(0x0001) == 0x1p-133f);
  CHECK(bf16_to_float(0x8001) == -0x1p-133f);
}

TEST_CASE("kernels::bf16_to_float is exact: every bf16 pattern round-trips") {
  int bad_bits = 0, bad_round_trips = 0;
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = bf16_to_float(static_cast<uint16_t>(b));
    bad_bits += std::bit_cast<uint32_t>(f) != b << 16;
    bad_round_trips += std::isnan(f) ? !std::isnan(bf16_to_float(float_to_bf16(f))) : float_to_bf16(f) != b;
  }
  CHECK(bad_bits == 0);
  CHECK(bad_round_trips == 0);
}

// Specials, every bf16 pattern with random low bits, ties, and random normals.
std::vector<float> cast_inputs() {
  std::vector<float> v;
  for (uint32_t u : {0x00000000u, 0x80000000u, 0x00000001u, 0x00008000u, 0x00018000u, 0x007fffffu, 0x7f7fffffu,
                     0x7f7f7fffu, 0x7f800000u, 0xff800000u, 0x7f800001u, 0x7fc00000u, 0xffffffffu, 0x3f808000u,
                     0x3f818000u}) {
    v.push_back(from_bits(u));
  }
  std::mt19937 gen(7);
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    v.push_back(from_bits(b << 16 | (gen() & 0xffffu)));
    v.push_back(from_bits(b << 16 | 0x8000u));
  }
  std::normal_distribution<float> dist(0.0f, 3.0f);
  for (int i = 0; i < 1000; ++i) v.push_back(dist(gen));
  return v;
}

TEST_CASE("kernels::cast_f32_to_bf16 and cast_bf16_to_f32 match the scalar helpers bit for bit") {
  const std::vector<float> x = cast_inputs();
  // Odd lengths and offsets exercise the vector loops' remainders.
  for (size_t offset : {size_t{0}, size_t{3}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{17}, x.size() - offset}) {
      CAPTURE(offset);
      CAPTURE(n);
      std::vector<uint16_t> b(n + 1, 0xabcd), portable(n + 1, 0xabcd);
      cast_f32_to_bf16(x.data() + offset, b.data(), static_cast<int64_t>(n));
      detail::cast_f32_to_bf16_portable(x.data() + offset, portable.data(), static_cast<int64_t>(n));
      size_t bad = 0, bad_portable = 0;
      for (size_t i = 0; i < n; ++i) {
        bad += b[i] != float_to_bf16(x[offset + i]);
        bad_portable += portable[i] != float_to_bf16(x[offset + i]);
      }
      CHECK(bad == 0);
      CHECK(bad_portable == 0);
      CHECK(b[n] == 0xabcd);  // nothing written past n
      CHECK(portable[n] == 0xabcd);

      std::vector<float> back(n + 1, 42.0f);
      cast_bf16_to_f32(b.data(), back.data(), static_cast<int64_t>(n));
      bad = 0;
      for (size_t i = 0; i < n; ++i) bad += std::bit_cast<uint32_t>(back[i]) != std::bit_cast<uint32_t>(bf16_to_float(b[i]));
      CHECK(bad == 0);
      CHECK(back[n] == 42.0f);
    }
  }
}

TEST_CASE("kernels::relu_grad_f32_to_bf16 equals the float32 mask followed by the cast, bit for bit") {
  const std::vector<float> dy = cast_inputs();
  // The ReLU outputs: every sign and special (0, -0, NaN, inf, denormals) in
  // a pattern that does not line up with dy's specials or the 16-lane blocks.
  const std::vector<float> specials{0.0f, -0.0f, 1.0f, -1.0f, from_bits(0x00000001u), from_bits(0x80000001u),
                                    from_bits(0x7fc00000u), from_bits(0xffc00000u), from_bits(0x7f800000u),
                                    from_bits(0xff800000u), 2.5f};
  std::vector<float> y(dy.size());
  for (size_t i = 0; i < y.size(); ++i) y[i] = specials[(i * 7 + i / 13) % specials.size()];
  int64_t kept = 0;
  for (size_t offset : {size_t{0}, size_t{5}}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{16}, size_t{31}, dy.size() - offset}) {
      CAPTURE(offset);
      CAPTURE(n);
      std::vector<uint16_t> fused(n + 1, 0xabcd), portable(n + 1, 0xabcd);
      relu_grad_f32_to_bf16(dy.data() + offset, y.data() + offset, fused.data(), static_cast<int64_t>(n));
      detail::relu_grad_f32_to_bf16_portable(dy.data() + offset, y.data() + offset, portable.data(),
                                             static_cast<int64_t>(n));
      size_t bad = 0, bad_portable = 0;
      for (size_t i = 0; i < n; ++i) {
        const float masked = y[offset + i] > 0.0f ? dy[offset + i] : 0.0f;
        kept += masked != 0.0f;
        bad += fused[i] != float_to_bf16(masked);
        bad_portable += portable[i] != float_to_bf16(masked);
      }
      CHECK(bad == 0);
      CHECK(bad_portable == 0);
      CHECK(fused[n] == 0xabcd);  // nothing written past n
      CHECK(portable[n] == 0xabcd);
    }
  }
  CHECK(kept > 10000);  // the mask kept values as well as zeroing them
}

}  // namespace
}  // namespace dtrain::kernels
