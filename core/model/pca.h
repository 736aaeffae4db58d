// Principal component analysis of a small matrix of row vectors (one head's queries and keys over a
// corpus: model/atlas.h): centre the rows, then the eigenvectors of their covariance, the largest
// first — the right singular vectors of the centred matrix, as numpy's SVD gives them (up to sign).
#pragma once

#include <vector>

namespace attnviz {

struct Pca {
  int rows = 0, dims = 0, components = 0;
  std::vector<double> mean;                // [dims]
  std::vector<double> axes;                // [components, dims] unit vectors, largest variance
                                           // first; each one's entry of largest |value| positive
  std::vector<double> projections;         // [rows, components] (row − mean) · axis
  std::vector<double> explained_variance;  // [components] variance along each axis: S² / (rows − 1)
  std::vector<double> explained_ratio;     // [components] its share of the total variance
};

// The top `components` principal components of `rows` row vectors of `dims` floats (row-major), in
// double. Throws Error(BadInput) for fewer than 2 rows or components outside 1..dims.
Pca principalComponents(const float* data, int rows, int dims, int components);

}  // namespace attnviz
