#pragma once
/// CRC-32 (IEEE 802.3, polynomial 0x04C11DB7, reflected), as switches use for ECMP hashing and
/// RoCE NICs for the IPv6 flow label (DOMAIN.md section 5).

#include <cstddef>
#include <cstdint>
#include <span>

namespace stepsim {

/// CRC-32 of `data`, continuing from `crc` (0 to start). crc32("123456789") = 0xCBF43926.
std::uint32_t crc32(std::span<const std::uint8_t> data, std::uint32_t crc = 0);

}  // namespace stepsim
