// tapevm: record a function once into a bytecode tape, then evaluate values and derivatives
// of that tape for large batches of points. Include this header for the whole public API.
// What may be used from several threads (and processes) at once: docs/THREADS.md.
#pragma once

#include "tapevm/batch.hpp"
#include "tapevm/error.hpp"
#include "tapevm/evaluator.hpp"
#include "tapevm/hessian.hpp"
#include "tapevm/op.hpp"
#include "tapevm/optimize.hpp"
#include "tapevm/reduced.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/sparse.hpp"
#include "tapevm/sparse_hessian.hpp"
#include "tapevm/tape.hpp"
#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"
