#pragma once
/// Congestion control of one sender (queue pair): an interface, parameters and a registry.
/// One file per algorithm in src/cc/ ("none", "dcqcn", "hpcc", "nscc"), each registering its name,
/// a one-line description, its parameters and what it needs from the transport and the fabric
/// (CcNeeds: INT telemetry, CNPs, an ACK per packet). The NIC calls the hooks, paces the QP at
/// rate(), keeps at most window() bytes unacknowledged (when it is > 0) and schedules an event at
/// next_timer().

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "stepsim/core/fatal.hpp"
#include "stepsim/core/result.hpp"
#include "stepsim/core/units.hpp"

namespace stepsim::config {
class ParamTable;
}

namespace stepsim::cc {

/// DCQCN parameters. The defaults are the NVIDIA (mlx5) firmware's defaults of ConnectX-4 and
/// later ("mlx5" set); `dcqcn_preset("sigcomm15")` gives the paper's 40G settings (Zhu et al.,
/// SIGCOMM 2015; validation/fabric.md C3). docs/nic.md lists the source of every value.
struct DcqcnParams {
  std::string preset = "mlx5";                  ///< the named set these values started from
  double g = 5.0 / 1024;                        ///< alpha gain (dce_tcp_g 1019: 1 - 1019/1024)
  double initial_alpha = 1023.0 / 1024;         ///< alpha at the first CNP (initial_alpha_value)
  SimTime alpha_timer = SimTime::us(1);         ///< K: alpha decays by (1 - g) each K without CNP
  SimTime rate_reduce_period = SimTime::us(4);  ///< at most one cut per period (0: every CNP)
  bool clamp_target = false;                    ///< every cut sets the target to the current rate
  bool clamp_target_after_timer = true;  ///< a cut sets the target if the timer raised the rate
  SimTime increase_timer = SimTime::us(300);      ///< T: rate-increase timer period
  std::int64_t byte_counter = 32767;              ///< B: bytes per byte-counter increase event
  int fast_recovery_rounds = 1;                   ///< F
  DataRate rate_ai = DataRate::bps(5'000'000);    ///< R_AI: additive increase step
  DataRate rate_hai = DataRate::bps(50'000'000);  ///< R_HAI: hyper increase step
  DataRate min_rate = DataRate::bps(1'000'000);   ///< floor of the current rate
  SimTime cnp_interval = SimTime::us(4);          ///< N: at most one CNP per QP per interval
};

/// The named DCQCN parameter sets: "mlx5" (the defaults) and "sigcomm15" (the paper's).
[[nodiscard]] std::vector<std::string> dcqcn_preset_names();
/// `name`'s set; false (and `out` untouched) for an unknown name.
bool dcqcn_preset(const std::string& name, DcqcnParams& out);

/// HPCC parameters (Li et al., "HPCC: High Precision Congestion Control", SIGCOMM 2019,
/// Algorithm 1), the paper's defaults.
struct HpccParams {
  double eta = 0.95;  ///< target utilization
  int max_stage = 5;  ///< additive-increase rounds before a multiplicative update
  DataRate rate_ai;   ///< W_AI / T as a rate; 0: line rate / 2000 (50 Mb/s at 100G, as the paper)
  SimTime base_rtt;   ///< T; 0: the NIC's estimate of the QP's path RTT
};

/// The parameter structs of algorithms that keep them in their own file (docs/extending.md), by
/// algorithm name; copies are deep. DCQCN's and HPCC's are CcParams members (public API).
class CcParamBlocks {
 public:
  CcParamBlocks() = default;
  CcParamBlocks(const CcParamBlocks& other) { *this = other; }
  CcParamBlocks& operator=(const CcParamBlocks& other) {
    if (this == &other) return *this;
    blocks_.clear();
    for (const auto& [name, block] : other.blocks_) blocks_.emplace(name, block->clone());
    return *this;
  }
  CcParamBlocks(CcParamBlocks&&) noexcept = default;
  CcParamBlocks& operator=(CcParamBlocks&&) noexcept = default;
  ~CcParamBlocks() = default;

  /// `name`'s parameters, created as T{} (its defaults) on first use.
  template <class T>
  T& get(const std::string& name) {
    auto it = blocks_.find(name);
    if (it == blocks_.end()) it = blocks_.emplace(name, std::make_unique<Holder<T>>()).first;
    auto* h = dynamic_cast<Holder<T>*>(it->second.get());
    STEPSIM_CHECK(h != nullptr, "cc parameters of '" + name + "' read as another type");
    return h->value;
  }
  /// `name`'s parameters; the defaults if none were set.
  template <class T>
  [[nodiscard]] T get(const std::string& name) const {
    const auto it = blocks_.find(name);
    if (it == blocks_.end()) return T{};
    const auto* h = dynamic_cast<const Holder<T>*>(it->second.get());
    STEPSIM_CHECK(h != nullptr, "cc parameters of '" + name + "' read as another type");
    return h->value;
  }

 private:
  struct Block {
    virtual ~Block() = default;
    [[nodiscard]] virtual std::unique_ptr<Block> clone() const = 0;
  };
  template <class T>
  struct Holder final : Block {
    T value{};
    [[nodiscard]] std::unique_ptr<Block> clone() const override {
      return std::make_unique<Holder<T>>(*this);
    }
  };
  std::map<std::string, std::unique_ptr<Block>> blocks_;
};

struct CcParams {
  std::string algorithm = "dcqcn";
  /// cc.algorithm was set (otherwise transport.kind uet picks nscc).
  bool algorithm_chosen = false;
  DcqcnParams dcqcn;
  HpccParams hpcc;
  CcParamBlocks more;  ///< every other algorithm's parameters, by its name
};

/// What an algorithm knows of its QP's path when it is created.
struct CcPath {
  DataRate line_rate;  ///< the NIC port's data rate
  SimTime base_rtt;    ///< unloaded round trip of one MTU packet and its ACK
};

/// What an acknowledgement tells the sender.
struct AckInfo {
  std::int64_t acked = 0;   ///< cumulative bytes of the QP acknowledged so far
  double utilization = -1;  ///< INT: the most loaded hop's normalized utilization (<0: none)
  /// CcNeeds::ack_echo: the round trip of the data packet it answers (never(): not measured, as
  /// for a retransmitted one), whether that packet arrived CE-marked and its frame bytes.
  SimTime rtt = SimTime::never();
  bool ecn = false;
  std::int64_t bytes = 0;
};

class CongestionControl {
 public:
  /// What an algorithm declares in its registration (src/cc/cc_registry.hpp): its needs and its
  /// parameters.
  struct Traits;
  virtual ~CongestionControl() = default;
  /// The rate the QP may send at now.
  [[nodiscard]] virtual DataRate rate() const = 0;
  /// The QP put `bytes` on the wire at `now`.
  virtual void on_sent(SimTime now, std::int64_t bytes) = 0;
  /// A congestion notification (CNP) for this QP arrived at `now`.
  virtual void on_cnp(SimTime now) = 0;
  /// An acknowledgement arrived at `now` (window-based algorithms react to it).
  virtual void on_ack(SimTime /*now*/, const AckInfo& /*ack*/) {}
  /// A NACK for a packet a switch trimmed (fabric.trimming) arrived at `now`.
  virtual void on_nack(SimTime /*now*/) {}
  /// Bytes the QP may have unacknowledged; 0: no window (rate only).
  [[nodiscard]] virtual std::int64_t window() const { return 0; }
  /// When on_timer() wants to run next; never() if no timer is armed.
  [[nodiscard]] virtual SimTime next_timer() const = 0;
  /// Runs the timers due at `now` (the NIC calls it at next_timer()).
  virtual void on_timer(SimTime now) = 0;
};

/// What an algorithm needs from the transport and the fabric, declared by its registry entry (as
/// ns-3's TcpCongestionOps tells the socket what it needs); the NIC and the fabric read this,
/// never the algorithm's name.
struct CcNeeds {
  bool int_telemetry = false;   ///< switches stamp INT into data packets, ACKs echo it (HPCC)
  bool cnp = false;             ///< receivers send CNPs for ECN-marked packets (DCQCN)
  bool ack_per_packet = false;  ///< every data packet asks for an ACK (a window needs each one)
  /// ACKs echo the CE mark and the PSN of the data packet that asked for them, also past a hole,
  /// and the sender measures each one's round trip (AckInfo::rtt: NSCC)
  bool ack_echo = false;
  SimTime cnp_interval;   ///< when cnp: at most one CNP per QP per interval
  SimTime telemetry_rtt;  ///< when int_telemetry: the switches' INT window; 0: the fabric's
};

/// One registered algorithm, as `stepsim list cc` shows it.
struct CcAlgorithmInfo {
  std::string name;
  std::string description;  ///< one line: what it models and after which paper
};

/// Creates `p.algorithm` for a QP on `path`; the error lists the algorithms.
Result<std::unique_ptr<CongestionControl>> make_congestion_control(const CcParams& p,
                                                                   const CcPath& path);
/// What `p.algorithm` needs (with its parameters); the error lists the algorithms.
Result<CcNeeds> congestion_control_needs(const CcParams& p);
/// Registered names, sorted.
std::vector<std::string> congestion_control_names();
/// Registered algorithms with their descriptions, sorted by name.
std::vector<CcAlgorithmInfo> congestion_control_algorithms();
/// Declares `cc.algorithm` and every algorithm's parameters ("cc.<name>.<key>") bound to `p`.
void declare_cc_params(config::ParamTable& table, CcParams& p);

/// The notification point (receiver) of DCQCN: at most one CNP per QP per interval, sent when an
/// ECN-marked packet arrives.
class CnpGenerator {
 public:
  explicit CnpGenerator(SimTime interval) : interval_(interval) {}
  /// A packet arrived at `now`; true if a CNP must be sent for it.
  bool on_packet(SimTime now, bool ecn_marked) {
    if (!ecn_marked) return false;
    if (sent_any_ && now - last_ < interval_) return false;
    sent_any_ = true;
    last_ = now;
    return true;
  }

 private:
  SimTime interval_;
  SimTime last_;
  bool sent_any_ = false;
};

}  // namespace stepsim::cc
