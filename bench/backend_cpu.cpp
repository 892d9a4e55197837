// Backend "cpu": tapevm::cpu::Vm with the problem's thread count and the widest instruction
// set (TAPEVM_CPU_ISA narrows it).
#include <memory>
#include <string>

#include "backends.hpp"
#include "evaluator_runner.hpp"
#include "tapevm/cpu.hpp"

namespace tapevm::bench {

std::unique_ptr<Runner> make_cpu_runner(const Problem& problem) {
    cpu::Options options;
    options.threads = problem.threads;
    auto vm = std::make_unique<cpu::Vm>(problem.workload->tape, options);
    const std::string isa(cpu::isa_name(vm->isa()));
    const unsigned threads = vm->threads();
    return make_evaluator_runner(std::move(vm), problem, isa, threads);
}

}  // namespace tapevm::bench
