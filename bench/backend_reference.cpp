// Backend "reference": the scalar reference VM (one thread), the oracle itself, timed.
#include <memory>

#include "backends.hpp"
#include "evaluator_runner.hpp"
#include "tapevm/reference.hpp"

namespace tapevm::bench {

std::unique_ptr<Runner> make_reference_runner(const Problem& problem) {
    return make_evaluator_runner(std::make_unique<reference::Vm>(problem.workload->tape), problem, "scalar",
                                 1);
}

}  // namespace tapevm::bench
