"""Write numpy's principal component analysis of fixed sets of vectors, the reference for the head
atlas's joint query-key embedding (core/model/pca.h, tests/test_atlas.cpp).

For every case: float32 vectors drawn from a seeded generator (an anisotropic Gaussian cloud,
rotated and shifted, so that the components are well separated), and numpy's PCA of them computed
independently of the C++ code: the SVD of the centred float64 matrix, X - mean = U S Vt; the axes
are the first rows of Vt, the explained variance S^2 / (n - 1), its ratio S^2 / sum(S^2), and the
projections U S. The C++ side computes the eigenvectors of the covariance instead; axes and
projections agree up to the sign of each component.

Writes DIR/pca_references.json: {"cases": [{"name", "rows", "dims", "components",
"input" [rows*dims], "mean" [dims], "axes" [components][dims], "explained_variance",
"explained_ratio" [components], "projections" [rows][components]}]}.

usage: /usr/bin/python3 tools/make_atlas_references.py --out DIR
"""
import argparse
import json
import os

import numpy as np


def case(name, rows, dims, components, scales, seed):
    rng = np.random.default_rng(seed)
    cloud = rng.standard_normal((rows, dims)) * np.asarray(scales, dtype=np.float64)
    rotation, _ = np.linalg.qr(rng.standard_normal((dims, dims)))
    shift = rng.uniform(-3.0, 3.0, dims)
    x32 = (cloud @ rotation.T + shift).astype(np.float32)
    x = x32.astype(np.float64)
    mean = x.mean(axis=0)
    u, s, vt = np.linalg.svd(x - mean, full_matrices=False)
    variance = s ** 2 / (rows - 1)
    return {
        "name": name,
        "rows": rows,
        "dims": dims,
        "components": components,
        "input": [float(v) for v in x32.reshape(-1)],
        "mean": mean.tolist(),
        "axes": vt[:components].tolist(),
        "explained_variance": variance[:components].tolist(),
        "explained_ratio": (variance[:components] / variance.sum()).tolist(),
        "projections": (u[:, :components] * s[:components]).tolist(),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    cases = [
        # a head's shape: d_k 32, a few hundred query and key vectors
        case("cloud_300x32", 300, 32, 2, [6.0, 3.0] + [1.0 / (1 + k) for k in range(30)], 7),
        # fewer vectors than dimensions: the covariance is singular
        case("few_9x16", 9, 16, 3, [5.0, 2.5, 1.2] + [0.3] * 13, 11),
        # every component of a small space
        case("full_200x6", 200, 6, 6, [4.0, 3.0, 2.0, 1.0, 0.5, 0.25], 3),
    ]
    path = os.path.join(args.out, "pca_references.json")
    with open(path, "w") as f:
        json.dump({"cases": cases}, f)
    print(f"wrote {path}: {', '.join(c['name'] for c in cases)}")


if __name__ == "__main__":
    main()
