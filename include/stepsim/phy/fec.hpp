#pragma once
/// Forward error correction: from a pre-FEC bit error rate to codeword failures and packet loss
/// (DOMAIN.md section 1). Reed-Solomon codes over m-bit symbols correct t = (n - k) / 2 symbols.

#include <cstdint>
#include <span>

#include "stepsim/core/units.hpp"

namespace stepsim::phy {

/// A Reed-Solomon code RS(n, k) over `symbol_bits`-bit symbols.
struct RsCode {
  int n = 544;
  int k = 514;
  int symbol_bits = 10;
  /// Correctable symbol errors per codeword.
  [[nodiscard]] int t() const { return (n - k) / 2; }
  /// Payload bits per codeword.
  [[nodiscard]] std::int64_t data_bits() const {
    return static_cast<std::int64_t>(k) * symbol_bits;
  }
};

inline constexpr RsCode kKp4{544, 514, 10};  ///< RS(544,514), 200G/100G-per-lane Ethernet and IB
inline constexpr RsCode kKr4{528, 514, 10};  ///< RS(528,514), 25G-per-lane Ethernet

/// Probability that an m-bit symbol has at least one bit error: 1 - (1 - ber)^m.
double symbol_error_probability(double ber, int symbol_bits);

/// Probability that a codeword has more than t symbol errors (independent bit errors): the exact
/// binomial tail sum_{j=t+1..n} C(n,j) p^j (1-p)^(n-j), p the symbol error probability.
double codeword_failure_probability(const RsCode& code, double ber);

/// Probability that a codeword has between 1 and t symbol errors (corrected by the FEC).
double codeword_corrected_probability(const RsCode& code, double ber);

/// Codeword failure under burst errors: errors come in bursts that each corrupt `burst_symbols`
/// consecutive symbols, with the same mean symbol error rate as independent errors. A codeword
/// fails when the symbols hit by bursts exceed t. burst_symbols = 1 is the independent case.
double codeword_failure_probability_burst(const RsCode& code, double ber, int burst_symbols);

/// Codeword failure when the lanes of a port have different pre-FEC BERs: the symbols of a
/// codeword are distributed round robin over the lanes (as the PMA does), so the symbol errors
/// of a codeword are a sum of per-lane binomials. Exact (full convolution, summed tail).
double codeword_failure_probability_lanes(const RsCode& code, std::span<const double> lane_ber);

/// Codewords a frame of `frame` bytes spans (its bits over the code's payload bits, rounded up).
std::int64_t codewords_spanned(const RsCode& code, Bytes frame);

/// Probability that at least one of `codewords` independent codewords fails.
double any_failure_probability(double codeword_failure, std::int64_t codewords);

/// Without FEC: probability that a frame of `frame` bytes has at least one bit error.
double raw_frame_error_probability(double ber, Bytes frame);

}  // namespace stepsim::phy
