#include "src/nic/retransmission_strategy.hpp"

#include "stepsim/fabric/load_balancer.hpp"
#include "stepsim/nic/nic_params.hpp"

namespace stepsim::nic {

Result<std::unique_ptr<RetransmissionStrategy>> make_retransmission(
    const std::string& name, const RetransmissionConfig& config) {
  return RetransmissionRegistry::create("retransmission", name, config);
}

std::vector<std::string> retransmission_names() {
  return RetransmissionRegistry::names();
}

Result<std::string> parse_retransmission(const std::string& name) {
  // The names the transport has always accepted for the two strategies.
  const std::string canonical = name == "go_back_n" ? "gbn" : name == "sr" ? "selective" : name;
  if (canonical == "auto") return canonical;
  for (const std::string& n : retransmission_names()) {
    if (n == canonical) return n;
  }
  std::string known;
  for (const std::string& n : retransmission_names()) known += (known.empty() ? "" : ", ") + n;
  return Error{"unknown retransmission '" + name + "' (allowed: auto, " + known + ")"};
}

std::string resolve_retransmission(const std::string& name, const std::string& lb) {
  if (name != "auto") return name;
  return fabric::lb_reorders(lb) ? "selective" : "gbn";
}

}  // namespace stepsim::nic
