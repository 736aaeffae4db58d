// T5's relative position buckets (modeling_t5.py's _relative_position_bucket): which row of a
// stack's relative position bias table [num_buckets, H] a (query, key) pair reads. One function
// for the CPU backend, the CUDA kernels (gpu/kernel_math.h includes it) and the host tests.
#pragma once

#include <math.h>  // logf, log: host and device alike

#if defined(__CUDACC__)
#define ATTNVIZ_BUCKET_FN __host__ __device__
#else
#define ATTNVIZ_BUCKET_FN
#endif

namespace attnviz {

// The bucket of relative position rel = key position − query position:
//   bidirectional (the encoder): half the buckets for keys after the query, half for the rest,
//     each half on |rel|;
//   unidirectional (the decoder): keys after the query read bucket 0, earlier ones −rel.
// Within a half of n buckets, distances below n/2 have a bucket each; larger ones share buckets
// logarithmically up to max_distance, beyond it the last bucket. The logarithm is computed in
// float32 as PyTorch computes it (then truncated), so that a boundary falls where it falls there.
// Needs num_buckets ≥ 4 (2 when unidirectional) and max_distance > the half's n/2 (checked by
// the config).
ATTNVIZ_BUCKET_FN inline int relative_position_bucket(int rel, bool bidirectional, int num_buckets,
                                                      int max_distance) {
  int bucket = 0, n = num_buckets;
  if (bidirectional) {
    n /= 2;
    if (rel > 0) bucket += n;
    rel = rel < 0 ? -rel : rel;
  } else {
    rel = rel < 0 ? -rel : 0;
  }
  const int max_exact = n / 2;
  if (rel < max_exact) return bucket + rel;
  const float large = logf((float)rel / (float)max_exact) /
                      (float)log((double)max_distance / (double)max_exact) * (float)(n - max_exact);
  const int at = max_exact + (int)large;
  return bucket + (at < n - 1 ? at : n - 1);
}

}  // namespace attnviz
