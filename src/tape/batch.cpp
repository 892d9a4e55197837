#include "tapevm/batch.hpp"

#include "tapevm/error.hpp"
#include "tapevm/tape.hpp"

namespace tapevm {

void check_size(const std::string& where, const std::string& argument, std::size_t expected,
                std::size_t buffer_size) {
    if (buffer_size != expected) throw ShapeError(where, argument, expected, buffer_size);
}

template <class Real> void check_batch(const Tape& tape, const Batch<Real>& batch, const std::string& where) {
    check_size(where, "inputs", batch.points * tape.input_count(), batch.inputs.size());
    const std::size_t shared = tape.param_count();
    if (batch.params.size() != shared && batch.params.size() != batch.points * shared) {
        throw ShapeError(where,
                         "params (expected " + std::to_string(shared) + " shared or " +
                             std::to_string(batch.points * shared) + " per point)",
                         shared, batch.params.size());
    }
}

template void check_batch(const Tape&, const Batch<double>&, const std::string&);
template void check_batch(const Tape&, const Batch<float>&, const std::string&);

}  // namespace tapevm
