// FEC arithmetic in log space, so that probabilities down to 1e-300 keep full relative precision
// (the validation table F1 has 1.4e-18 at BER 1e-4). Terms of the binomial tail are summed from
// the largest (j = t+1 for small p) in long double.
#include "stepsim/phy/fec.hpp"

#include <cmath>
#include <vector>

namespace stepsim::phy {
namespace {

// log of C(n, j) p^j (1-p)^(n-j).
long double log_binomial_term(int n, int j, long double log_p, long double log_q) {
  return std::lgammal(n + 1.0L) - std::lgammal(j + 1.0L) - std::lgammal(n - j + 1.0L) + j * log_p +
         (n - j) * log_q;
}

// P(X > t) and P(1 <= X <= t) for X ~ Binomial(n, p).
long double binomial_upper_tail(int n, int t, long double p) {
  if (p <= 0) return 0;
  if (p >= 1) return t < n ? 1 : 0;
  const long double log_p = std::log(p);
  const long double log_q = std::log1p(-p);
  long double sum = 0;
  for (int j = t + 1; j <= n; ++j) sum += std::exp(log_binomial_term(n, j, log_p, log_q));
  return sum;
}

long double binomial_range(int n, int lo, int hi, long double p) {
  if (p <= 0) return lo == 0 ? 1 : 0;
  const long double log_p = std::log(p);
  const long double log_q = std::log1p(-p);
  long double sum = 0;
  for (int j = lo; j <= hi && j <= n; ++j) sum += std::exp(log_binomial_term(n, j, log_p, log_q));
  return sum;
}

}  // namespace

double symbol_error_probability(double ber, int symbol_bits) {
  if (ber <= 0) return 0;
  if (ber >= 1) return 1;
  return static_cast<double>(-std::expm1(symbol_bits * std::log1p(static_cast<long double>(-ber))));
}

double codeword_failure_probability(const RsCode& code, double ber) {
  return codeword_failure_probability_burst(code, ber, 1);
}

double codeword_corrected_probability(const RsCode& code, double ber) {
  const long double p = symbol_error_probability(ber, code.symbol_bits);
  return static_cast<double>(binomial_range(code.n, 1, code.t(), p));
}

double codeword_failure_probability_burst(const RsCode& code, double ber, int burst_symbols) {
  const int b = burst_symbols < 1 ? 1 : burst_symbols;
  // Bursts start at a symbol with probability p_s / b (same mean corrupted symbols); the codeword
  // fails when more than floor(t / b) bursts start in it.
  const long double start = symbol_error_probability(ber, code.symbol_bits) / b;
  return static_cast<double>(binomial_upper_tail(code.n, code.t() / b, start));
}

double codeword_failure_probability_lanes(const RsCode& code, std::span<const double> lane_ber) {
  if (lane_ber.empty()) return 0;
  const int lanes = static_cast<int>(lane_ber.size());
  // dist[k] = P(k symbol errors so far), over all lanes convolved.
  std::vector<long double> dist(1, 1.0L);
  for (int l = 0; l < lanes; ++l) {
    const int symbols = code.n / lanes + (l < code.n % lanes ? 1 : 0);
    const long double p =
        symbol_error_probability(lane_ber[static_cast<std::size_t>(l)], code.symbol_bits);
    std::vector<long double> pmf(static_cast<std::size_t>(symbols) + 1, 0.0L);
    if (p <= 0) {
      pmf[0] = 1;
    } else {
      const long double log_p = std::log(p);
      const long double log_q = std::log1p(-p);
      for (int j = 0; j <= symbols; ++j)
        pmf[static_cast<std::size_t>(j)] = std::exp(log_binomial_term(symbols, j, log_p, log_q));
    }
    std::vector<long double> next(dist.size() + pmf.size() - 1, 0.0L);
    for (std::size_t a = 0; a < dist.size(); ++a) {
      for (std::size_t b = 0; b < pmf.size(); ++b) next[a + b] += dist[a] * pmf[b];
    }
    dist.swap(next);
  }
  long double tail = 0;
  for (std::size_t k = static_cast<std::size_t>(code.t()) + 1; k < dist.size(); ++k)
    tail += dist[k];
  return static_cast<double>(tail);
}

std::int64_t codewords_spanned(const RsCode& code, Bytes frame) {
  const std::int64_t bits = frame.count() * 8;
  return (bits + code.data_bits() - 1) / code.data_bits();
}

double any_failure_probability(double codeword_failure, std::int64_t codewords) {
  if (codeword_failure <= 0 || codewords <= 0) return 0;
  if (codeword_failure >= 1) return 1;
  return static_cast<double>(-std::expm1(static_cast<long double>(codewords) *
                                         std::log1p(static_cast<long double>(-codeword_failure))));
}

double raw_frame_error_probability(double ber, Bytes frame) {
  return any_failure_probability(ber, frame.count() * 8);
}

}  // namespace stepsim::phy
