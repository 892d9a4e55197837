// OpenBLAS's cblas.h, included once for the cpu backend, bench-nn and bench_nn_cpu: Debian's
// openblas_config.h declares C99 _Complex types, which clang -Wpedantic rejects in C++.
#pragma once

#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wc99-extensions"
#endif
#include <cblas.h>
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
