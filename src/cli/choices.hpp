#pragma once
// The names a command-line option accepts, from the registries that define them: every help
// text and error message that lists choices is built here, so a new plug-in appears in them
// without editing a string.

#include <string>
#include <vector>

namespace stepsim::cli {

/// "a, b or c" ("a" alone, "a or b"); `last` joins the last two.
std::string list_words(const std::vector<std::string>& names, const std::string& last = "or");

/// Registered names, in each registry's order.
std::vector<std::string> cc_choices();              ///< cc.algorithm, --cc
std::vector<std::string> lb_choices();              ///< fabric.lb, --lb
std::vector<std::string> retransmission_choices();  ///< nic.retransmission, --retransmission
std::vector<std::string> algorithm_choices();       ///< coll.algorithm, --algo (with auto)
std::vector<std::string> protocol_choices();        ///< coll.protocol, --proto (with auto)
std::vector<std::string> gpu_choices();             ///< --gpu, gpu presets
std::vector<std::string> partition_choices();       ///< --partition (without auto)
std::vector<std::string> fidelity_choices();        ///< fidelity, run --fidelity
std::vector<std::string> topology_choices();        ///< topology.kind (generators)
/// run --background: the fabric's traffic patterns but pair (one pair of NICs is no background).
std::vector<std::string> background_choices();

/// `names` (fidelities) as a help text lists them, each with what it models: "packet (MTU
/// packets), cell (...) or analytical (...)".
std::string fidelity_help(const std::vector<std::string>& names);

}  // namespace stepsim::cli
