// Device names: what messages print for a device and for a list of them.
#include <doctest.h>

#include "engine/base/device.hpp"

namespace dtrain {
namespace {

TEST_CASE("device: str names every kind, a cuda device as gpu:N") {
  CHECK(Device{DeviceKind::cpu, 0}.str() == "cpu:0");
  CHECK(Device{DeviceKind::debug, 2}.str() == "debug:2");
  CHECK(Device{DeviceKind::cuda, 1}.str() == "gpu:1");
}

TEST_CASE("device: device_list joins the names with \", \"") {
  CHECK(device_list({}) == "");
  CHECK(device_list({kHost}) == "cpu:0");
  CHECK(device_list({kHost, Device{DeviceKind::cpu, 1}, Device{DeviceKind::cuda, 0}}) == "cpu:0, cpu:1, gpu:0");
}

}  // namespace
}  // namespace dtrain
