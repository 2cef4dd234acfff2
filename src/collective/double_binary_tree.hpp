#pragma once
// NCCL's double binary tree over n nodes (graph/trees.cc: ncclGetBtree, ncclGetDtree; Sanders,
// Speck, Träff 2009), from its rules. Tree 0 is a binary tree over 0..n-1 rooted at 0 in which
// the odd nodes are the leaves: node r's parent clears r's lowest set bit b and sets bit 2b
// (1 -> 2, 3 -> 2, 5 -> 6, 2 -> 4, 6 -> 4, 4 -> 8), or only clears it when that is past the end;
// 0's single child is the largest power of two below n. Tree 1 is the mirror of tree 0 (node r
// plays n-1-r) for an even n and tree 0 shifted by one node (node r plays r-1 mod n) for an odd
// n, so a leaf of one tree is an inner node of the other: every node has at most four tree
// edges in the pair (parent and two children in one tree, a parent in the other) and its NIC
// carries at most 2 S per pair where each tree carries half of S. Used by `tree` and
// `nvls_tree`, whose channels alternate between the two trees as NCCL's do.
#include <cstdint>

#include "stepsim/topology/topology.hpp"

namespace stepsim::collective {

/// Node r's parent in tree 0 over n nodes, or topology::kNone for the root (0).
[[nodiscard]] inline std::uint32_t btree_parent(std::uint32_t n, std::uint32_t r) {
  if (r == 0) return topology::kNone;
  std::uint32_t bit = 1;
  while (bit < n && (bit & r) == 0) bit <<= 1;
  const std::uint32_t up = (r ^ bit) | (bit << 1);
  return up >= n ? (r ^ bit) : up;
}

/// Node r's parent in tree `tree` (0 or 1) of the double binary tree over n nodes, or
/// topology::kNone for that tree's root (0 in tree 0; n-1, or 1 for an odd n, in tree 1).
[[nodiscard]] inline std::uint32_t dtree_parent(std::uint32_t n, std::uint32_t r, int tree) {
  if (tree == 0) return btree_parent(n, r);
  if (n % 2 == 0) {
    const std::uint32_t u = btree_parent(n, n - 1 - r);
    return u == topology::kNone ? topology::kNone : n - 1 - u;
  }
  const std::uint32_t u = btree_parent(n, (r + n - 1) % n);
  return u == topology::kNone ? topology::kNone : (u + 1) % n;
}

}  // namespace stepsim::collective
