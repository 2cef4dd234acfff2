#pragma once
/// Which NIC of a server each of its GPUs uses. GPUs reach NICs through PCIe switches in equal
/// consecutive blocks: with G GPUs and N NICs (N dividing G), GPUs i*G/N .. (i+1)*G/N - 1 share
/// NIC i (8 GPUs, 2 NICs: GPUs 0-3 on NIC 0, 4-7 on NIC 1); with N >= G, GPU g uses NIC g.

#include <cstdint>

#include "stepsim/topology/topology.hpp"

namespace stepsim::topology {

/// The port index (NIC) of server `server` that its GPU `g` uses.
[[nodiscard]] inline std::uint32_t nic_of_gpu(const Node& server, std::uint32_t g) {
  const std::uint32_t n = server.gpus > 0 ? server.gpus : 1;
  if (server.port_count == 0) return 0;
  return server.port_count >= n
             ? g % server.port_count
             : static_cast<std::uint32_t>(std::uint64_t{g} * server.port_count / n);
}

/// The first GPU of server `server` that uses its NIC `i` (the GPU whose PCIe switch holds it);
/// NICs beyond the GPU count map to GPU i mod G.
[[nodiscard]] inline std::uint32_t gpu_of_nic(const Node& server, std::uint32_t i) {
  const std::uint32_t n = server.gpus > 0 ? server.gpus : 1;
  const std::uint32_t nics = server.port_count;
  return nics >= n ? i % n : static_cast<std::uint32_t>((std::uint64_t{i} * n + nics - 1) / nics);
}

}  // namespace stepsim::topology
