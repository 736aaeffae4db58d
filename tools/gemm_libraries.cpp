// Single-core float32 matrix products at the shapes of the tutorial-size model (d_model 512,
// d_ff 2048, 8 heads of 64, vocabulary 1000) in one library, for choosing the CPU backend's BLAS
// (docs/performance.md). Not part of the build; compile one binary per library:
//   g++ -O2 -DUSE_OPENBLAS $(pkg-config --cflags openblas) tools/gemm_libraries.cpp -lopenblas
//   g++ -O2 -DUSE_BLIS -I/usr/include/x86_64-linux-gnu/blis-openmp tools/gemm_libraries.cpp -lblis
//   g++ -O2 -DUSE_DNNL tools/gemm_libraries.cpp -ldnnl
//   g++ -O2 [-march=native] -I/usr/include/eigen3 tools/gemm_libraries.cpp       (Eigen)
// and run each with OMP_NUM_THREADS=1 BLIS_NUM_THREADS=1. Prints GFLOP/s, best of 5.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#if defined(USE_OPENBLAS)
#include <cblas.h>
#elif defined(USE_BLIS)
#include <blis.h>
#elif defined(USE_DNNL)
#include <dnnl.h>
#else
#include <Eigen/Core>
#endif

namespace {

// C[M, N] = A[M, K] · op(B): op(B) = B[N, K]ᵀ (a linear layer, QKᵀ) or B[K, N] (probs · V).
struct Shape {
  int M, N, K;
  bool b_transposed;
  const char* what;
};

void gemm(const Shape& s, const float* A, const float* B, float* C) {
  const int ldb = s.b_transposed ? s.K : s.N;
#if defined(USE_OPENBLAS)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, s.b_transposed ? CblasTrans : CblasNoTrans, s.M, s.N,
              s.K, 1.0f, A, s.K, B, ldb, 0.0f, C, s.N);
#elif defined(USE_BLIS)
  float one = 1.0f, zero = 0.0f;  // BLIS takes row and column strides of every operand
  bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, s.M, s.N, s.K, &one, const_cast<float*>(A), s.K,
            1, const_cast<float*>(B), s.b_transposed ? 1 : ldb, s.b_transposed ? ldb : 1, &zero, C,
            s.N, 1);
#elif defined(USE_DNNL)
  dnnl_sgemm('N', s.b_transposed ? 'T' : 'N', s.M, s.N, s.K, 1.0f, A, s.K, B, ldb, 0.0f, C, s.N);
#else
  using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Matrix> a(A, s.M, s.K);
  Eigen::Map<Matrix> c(C, s.M, s.N);
  if (s.b_transposed)
    c.noalias() = a * Eigen::Map<const Matrix>(B, s.N, s.K).transpose();
  else
    c.noalias() = a * Eigen::Map<const Matrix>(B, s.K, s.N);
#endif
}

}  // namespace

int main() {
#if defined(USE_OPENBLAS)
  openblas_set_num_threads(1);
  const char* library = "openblas";
#elif defined(USE_BLIS)
  bli_thread_set_num_threads(1);
  const char* library = "blis";
#elif defined(USE_DNNL)
  const char* library = "onednn";
#else
  const char* library = "eigen";
#endif
  const Shape shapes[] = {{32, 1536, 512, true, "qkv"},      {32, 2048, 512, true, "ffn1"},
                          {32, 512, 2048, true, "ffn2"},     {32, 1000, 512, true, "logits"},
                          {128, 1536, 512, true, "qkv"},     {128, 2048, 512, true, "ffn1"},
                          {128, 512, 2048, true, "ffn2"},    {512, 1536, 512, true, "qkv"},
                          {512, 2048, 512, true, "ffn1"},    {512, 512, 2048, true, "ffn2"},
                          {512, 1000, 512, true, "logits"},  {32, 32, 64, true, "scores"},
                          {32, 64, 32, false, "context"},    {128, 128, 64, true, "scores"},
                          {128, 64, 128, false, "context"},  {512, 512, 64, true, "scores"},
                          {512, 64, 512, false, "context"},  {1, 2048, 512, true, "ffn1_1row"},
                          {2048, 2048, 2048, true, "square"}};
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape& s : shapes) {
    std::vector<float> A(size_t(s.M) * s.K), B(size_t(s.N) * s.K), C(size_t(s.M) * s.N);
    for (float& v : A) v = dist(rng);
    for (float& v : B) v = dist(rng);
    const double flops = 2.0 * s.M * s.N * s.K;
    const int reps = std::max(3, int(2e9 / flops));
    gemm(s, A.data(), B.data(), C.data());
    double best = 1e30;
    for (int round = 0; round < 5; ++round) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < reps; ++i) gemm(s, A.data(), B.data(), C.data());
      const double t =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / reps;
      best = std::min(best, t);
    }
    std::printf("%-9s %-10s %5d %5d %5d  %6.1f GFLOP/s\n", library, s.what, s.M, s.N, s.K,
                flops / best * 1e-9);
  }
}
