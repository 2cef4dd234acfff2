#pragma once
// NCCL's environment variables that `bench nccl` honours, read as NCCL reads them (NCCL's
// environment-variable documentation): NCCL_ALGO and NCCL_PROTO force the tuner's algorithm and
// protocol, NCCL_NCHANNELS / NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS the channels,
// NCCL_COLLNET_ENABLE lets the tuner use SHARP, NCCL_NVLS_ENABLE=0 turns NVLS off. Each one set
// gives the line NCCL prints with NCCL_DEBUG=INFO ("NCCL_ALGO set by environment to Ring").

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stepsim/core/result.hpp"

namespace stepsim::cli {

struct NcclEnv {
  std::optional<std::string> algo;   ///< NCCL_ALGO as stepsim names it (ring, tree, ...)
  std::optional<std::string> proto;  ///< NCCL_PROTO: simple, ll or ll128
  /// NCCL_ALGO / NCCL_PROTO as a list ("Ring,Tree": only those) or an exclusion ("^NVLS"): what
  /// the tuner may not choose, in stepsim's names (algo/proto then stay unset: the tuner runs).
  std::vector<std::string> algo_excluded;
  std::vector<std::string> proto_excluded;
  std::optional<int> channels;      ///< NCCL_NCHANNELS
  std::optional<int> min_channels;  ///< NCCL_MIN_NCHANNELS
  std::optional<int> max_channels;  ///< NCCL_MAX_NCHANNELS
  std::optional<int> collnet;       ///< NCCL_COLLNET_ENABLE (0 or 1)
  std::optional<int> nvls;          ///< NCCL_NVLS_ENABLE (0; 1 and 2 enable)
  std::vector<std::string> info;    ///< "NCCL_X set by environment to V", one per variable set

  /// The channels NCCL would open: NCCL_NCHANNELS if set, else `fallback` clamped into
  /// [NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS].
  [[nodiscard]] int channels_or(int fallback) const;
};

/// Reads the variables through `get` (std::getenv by default). `servers` is the communicator's
/// server count: NCCL_ALGO=NVLS across servers is NVLS with SHARP between them (nvls_sharp).
/// NCCL_ALGO and NCCL_PROTO take one name (forced), a comma-separated list (the tuner chooses
/// among them) or `^` and a list (the tuner chooses among the others), case-insensitive, as
/// NCCL reads them. An unknown name, NCCL's per-collective form ("allreduce:tree"), a list that
/// leaves nothing, or MIN above MAX is an error naming the variable and its values.
Result<NcclEnv> read_nccl_env(int servers,
                              const std::function<const char*(const char*)>& get = nullptr);

/// The stepsim algorithms NCCL_ALGO can name (ring, tree, nvls, nvls_sharp, ...), once each.
const std::vector<std::string>& nccl_algorithms();
/// The stepsim protocols NCCL_PROTO can name (simple, ll, ll128).
const std::vector<std::string>& nccl_protocols();

}  // namespace stepsim::cli
