#include "backend.hpp"

#include "op_cases.hpp"

namespace tapevm::conformance {

double Tolerances::value_ulp_for(Op op) const {
    if (const auto found = value_ulp.find(op); found != value_ulp.end()) return found->second;
    return op_case(op).accuracy == Accuracy::exact ? arithmetic_ulp : transcendental_ulp;
}

ErrorBound Tolerances::derivative_bound_for(Op op) const {
    if (const auto found = derivative_overrides.find(op); found != derivative_overrides.end()) {
        return found->second;
    }
    return derivatives;
}

const BackendUnderTest& backend() {
    static const BackendUnderTest instance = backend_under_test();
    return instance;
}

std::unique_ptr<Evaluator> make_evaluator(const Tape& tape) { return backend().make(tape); }

}  // namespace tapevm::conformance
