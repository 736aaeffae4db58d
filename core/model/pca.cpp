#include "model/pca.h"

#include <Eigen/Dense>
#include <cmath>
#include <string>

#include "base/error.h"

namespace attnviz {

Pca principalComponents(const float* data, int rows, int dims, int components) {
  if (rows < 2)
    throw Error(
        ErrorKind::BadInput,
        "a principal component analysis needs at least 2 vectors, got " + std::to_string(rows));
  if (dims < 1 || components < 1 || components > dims)
    throw Error(ErrorKind::BadInput, "cannot take " + std::to_string(components) +
                                         " principal components of " + std::to_string(dims) +
                                         "-dimensional vectors");
  using Matrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Matrix x =
      Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
          data, rows, dims)
          .cast<double>();
  const Eigen::RowVectorXd mean = x.colwise().mean();
  const Matrix centred = x.rowwise() - mean;
  // The covariance is dims × dims (64 for a head): its eigenvectors are the right singular vectors
  // of the centred matrix and its eigenvalues S² / (rows − 1), at a fraction of an SVD's cost.
  const Eigen::MatrixXd covariance = (centred.transpose() * centred) / double(rows - 1);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eigen(covariance);
  if (eigen.info() != Eigen::Success)
    throw Error(ErrorKind::BadInput, "the principal component analysis did not converge");
  const Eigen::VectorXd& values = eigen.eigenvalues();  // ascending
  const double total = values.cwiseMax(0.0).sum();

  Pca p;
  p.rows = rows;
  p.dims = dims;
  p.components = components;
  p.mean.assign(mean.data(), mean.data() + dims);
  p.axes.resize(size_t(components) * dims);
  p.explained_variance.resize(size_t(components));
  p.explained_ratio.resize(size_t(components));
  for (int c = 0; c < components; ++c) {
    const int e = dims - 1 - c;  // the largest first
    Eigen::VectorXd axis = eigen.eigenvectors().col(e);
    Eigen::Index largest = 0;
    axis.cwiseAbs().maxCoeff(&largest);
    if (axis(largest) < 0) axis = -axis;  // a fixed sign: the same picture on every run
    for (int k = 0; k < dims; ++k) p.axes[size_t(c) * dims + k] = axis(k);
    p.explained_variance[size_t(c)] = std::max(values(e), 0.0);
    p.explained_ratio[size_t(c)] = total > 0 ? p.explained_variance[size_t(c)] / total : 0.0;
  }
  const Eigen::Map<const Matrix> axes(p.axes.data(), components, dims);
  const Matrix projections = centred * axes.transpose();
  p.projections.assign(projections.data(), projections.data() + size_t(rows) * components);
  return p;
}

}  // namespace attnviz
