// Index arithmetic of the ops that move elements without computing on them
// (transpose, slice, concat, gather) and of the reductions, on any element
// type: the host reference runs them on FP32 values, the ONNX importer on
// the integer tensors it folds at import time. Shapes and attributes are
// those shape inference has checked (graph/shape_inference.h).
#pragma once

#include "graph/graph.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace tilec::graph::layout {

inline std::int64_t element_count(const Shape& shape) {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

// Row-major strides in elements.
inline std::vector<std::int64_t> strides_of(const Shape& shape) {
  std::vector<std::int64_t> strides(shape.size(), 1);
  for (std::size_t axis = shape.size(); axis-- > 1;) strides[axis - 1] = strides[axis] * shape[axis];
  return strides;
}

// Calls visit(base + sum_i index_i * strides[i]) for every index of
// `shape` in row-major order.
template <typename Visit>
void for_each_offset(const Shape& shape, const std::vector<std::int64_t>& strides, std::int64_t base, Visit&& visit) {
  const std::int64_t count = element_count(shape);
  std::vector<std::int64_t> index(shape.size(), 0);
  std::int64_t offset = base;
  for (std::int64_t i = 0; i < count; ++i) {
    visit(offset);
    // Advance the multi-index like an odometer, keeping the offset in step.
    for (std::size_t axis = shape.size(); axis-- > 0;) {
      offset += strides[axis];
      if (++index[axis] < shape[axis]) break;
      offset -= strides[axis] * shape[axis];
      index[axis] = 0;
    }
  }
}

// The elements at those offsets of x: a transpose or a slice.
template <typename T>
std::vector<T> strided_copy(std::span<const T> x, const Shape& shape, const std::vector<std::int64_t>& strides,
                            std::int64_t base) {
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(element_count(shape)));
  for_each_offset(shape, strides, base, [&](std::int64_t offset) { out.push_back(x[static_cast<std::size_t>(offset)]); });
  return out;
}

template <typename T>
std::vector<T> transpose(std::span<const T> x, const Shape& shape, const std::vector<std::int64_t>& permutation) {
  const std::vector<std::int64_t> source = strides_of(shape);
  Shape result;
  std::vector<std::int64_t> strides;
  for (std::int64_t axis : permutation) {
    result.push_back(shape[static_cast<std::size_t>(axis)]);
    strides.push_back(source[static_cast<std::size_t>(axis)]);
  }
  return strided_copy(x, result, strides, 0);
}

// `result` is the slice's shape (from shape inference).
template <typename T>
std::vector<T> slice(std::span<const T> x, const Shape& shape, const Op& op, const Shape& result) {
  const std::vector<std::int64_t> source = strides_of(shape);
  std::vector<std::int64_t> strides;
  std::int64_t base = 0;
  for (std::size_t axis = 0; axis < shape.size(); ++axis) {
    strides.push_back(source[axis] * op.steps[axis]);
    base += source[axis] * op.starts[axis];
  }
  return strided_copy(x, result, strides, base);
}

// Each operand's block of `axis` and after, operand by operand, for every
// index of the axes before.
template <typename T>
std::vector<T> concat(const std::vector<std::span<const T>>& parts, const std::vector<Shape>& shapes,
                      std::size_t axis) {
  const Shape& first = shapes.front();
  const std::int64_t outer = element_count(Shape(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(axis)));
  std::vector<T> out;
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const std::int64_t block = element_count(shapes[p]) / outer;
      auto begin = parts[p].begin() + o * block;
      out.insert(out.end(), begin, begin + block);
    }
  return out;
}

template <typename T>
std::vector<T> gather(std::span<const T> x, const Shape& shape, std::size_t axis,
                      const std::vector<std::int64_t>& indices) {
  const std::int64_t outer = element_count(Shape(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(axis)));
  const std::int64_t inner =
      element_count(Shape(shape.begin() + static_cast<std::ptrdiff_t>(axis) + 1, shape.end()));
  const std::int64_t extent = shape[axis];
  std::vector<T> out;
  out.reserve(static_cast<std::size_t>(outer * static_cast<std::int64_t>(indices.size()) * inner));
  for (std::int64_t o = 0; o < outer; ++o)
    for (std::int64_t index : indices) {
      auto begin = x.begin() + (o * extent + index) * inner;
      out.insert(out.end(), begin, begin + inner);
    }
  return out;
}

// For every element of x (row-major), the index of the reduction's result
// it folds into: x's index with the reduced axes set to 0.
inline std::vector<std::int64_t> reduction_targets(const Shape& shape, const std::vector<std::int64_t>& axes) {
  Shape kept = shape;
  for (std::int64_t axis : axes) kept[static_cast<std::size_t>(axis)] = 1;
  std::vector<std::int64_t> strides = strides_of(kept);
  for (std::int64_t axis : axes) strides[static_cast<std::size_t>(axis)] = 0;
  std::vector<std::int64_t> targets;
  targets.reserve(static_cast<std::size_t>(element_count(shape)));
  for_each_offset(shape, strides, 0, [&](std::int64_t offset) { targets.push_back(offset); });
  return targets;
}

}  // namespace tilec::graph::layout
