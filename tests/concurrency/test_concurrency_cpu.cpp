// The thread-safety contract of the tape library and the CPU VM (docs/THREADS.md), exercised
// from 8 threads at once and compared with serial runs bit for bit: recording (thread-local),
// the reference VM and one cpu::Vm shared by every thread (const calls), Vms made and destroyed
// on every thread, and .tape files saved and loaded at once. Built twice in CI: in the
// ordinary suites, and under ThreadSanitizer (dev.sh's tsan step), which also fails on any data
// race these calls contain.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include <doctest/doctest.h>
#include <unistd.h>

#include "concurrency_support.hpp"
#include "tapevm/cpu.hpp"
#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/reference.hpp"
#include "tapevm/tape_file.hpp"
#include "tapevm/var.hpp"

namespace tapevm::test {
namespace {

// Recording case k: constants, guards (branches on Var comparisons), select, powi and two
// outputs, each shaped by k so that the eight tapes differ.
Tape record_case(unsigned k) {
    const std::vector<double> at = {0.5 + 0.1 * k, -0.3, 1.2};
    return record(std::span<const double>(at), [k](std::span<const Var> x) {
        Var y = x[0] * x[1] + static_cast<double>(k);
        for (unsigned i = 0; i < 12 + k; ++i) {
            y = sin(y) * x[2] + y / (1.0 + x[i % 3] * x[i % 3]);
            if (y > x[1]) y = y - 0.5;  // a guard
            y = select(y < x[0], y * 1.5, pow(y, 2) + 0.25 * k);
            // Hands the core to another thread mid-recording, so that recordings interleave
            // even where threads outnumber cores (2 here) and a recording is shorter than a
            // time slice.
            std::this_thread::yield();
        }
        return std::vector<Var>{y, exp(y * x[0]) + hypot(x[1], x[2])};
    });
}

constexpr unsigned recording_cases = 8;

TEST_CASE("recording on 8 threads at once gives the tapes of a serial recording") {
    std::vector<Tape> expected;
    for (unsigned k = 0; k < recording_cases; ++k) expected.push_back(record_case(k));
    const std::vector<std::string> names = {"ba", "rosenbrock16", "trig16"};
    std::vector<Tape> expected_examples;
    for (const auto& name : names) expected_examples.push_back(examples::example_tape(name));

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < 24; ++round) {
            const unsigned k = (t + round) % recording_cases;
            if (!(record_case(k) == expected[k])) mismatches.add("case " + std::to_string(k));
            const std::size_t e = (t + round) % names.size();
            if (round % 4 == 0 && !(examples::example_tape(names[e]) == expected_examples[e]))
                mismatches.add("example " + names[e]);
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " tapes differ, first: " << mismatches.first());
}

TEST_CASE("a Var of another thread's recording is rejected, not recorded") {
    // Thread A records and hands a variable to thread B while its recording is open; B uses it
    // in its own recording: RecordingError, since each thread records its own tape.
    std::string error_in_b;
    bool b_recorded = false;
    const std::vector<double> at = {1.0};
    const Tape a_tape = record(std::span<const double>(at), [&](std::span<const Var> x) {
        const Var from_a = x[0] * 2.0;
        std::thread b([&] {
            try {
                (void)record(std::span<const double>(at),
                             [&](std::span<const Var> y) { return y[0] + from_a; });
                b_recorded = true;
            } catch (const RecordingError& error) {
                error_in_b = error.what();
            }
        });
        b.join();
        return from_a + 1.0;
    });
    CHECK_FALSE(b_recorded);
    CHECK(error_in_b.find("another recording") != std::string::npos);
    CHECK(a_tape.output_count() == 1);
}

// Inputs of `points` points for `tape`, around its recording point's scale.
std::vector<double> inputs_for(const Tape& tape, std::size_t points, unsigned salt) {
    std::vector<double> inputs(points * tape.input_count());
    for (std::size_t i = 0; i < inputs.size(); ++i)
        inputs[i] = std::fmod((i + 1) * 0.7548776662 * (salt + 1), 2.0) - 1.0;
    return inputs;
}

// Every mode of `evaluator` in precision Real, concatenated, with the diverged points.
template <class Real, class Evaluator>
std::vector<Real> every_mode(const Evaluator& evaluator, std::size_t points) {
    const Tape& tape = evaluator.tape();
    const auto wide = inputs_for(tape, points, 0);
    const std::vector<Real> inputs(wide.begin(), wide.end());
    const auto wide_tangents = inputs_for(tape, points, 1);
    const std::vector<Real> tangents(wide_tangents.begin(), wide_tangents.end());
    std::vector<Real> cotangents(points * tape.output_count());
    for (std::size_t i = 0; i < cotangents.size(); ++i)
        cotangents[i] = static_cast<Real>(0.25 * (i % 5) - 0.5);
    const Batch<Real> batch{points, inputs, {}};
    std::vector<Real> all;
    const auto append = [&](const Evaluation<Real>& e) {
        all.insert(all.end(), e.values.begin(), e.values.end());
        for (const std::size_t point : e.report.diverged) all.push_back(static_cast<Real>(point));
        all.push_back(static_cast<Real>(e.report.diverged.size()));
    };
    append(evaluator.forward(batch));
    append(evaluator.jacobian(batch, JacobianMode::forward));
    append(evaluator.jacobian(batch, JacobianMode::reverse));
    append(evaluator.jvp(batch, std::span<const Real>(tangents)));
    append(evaluator.vjp(batch, std::span<const Real>(cotangents)));
    append(evaluator.hvp(batch, std::span<const Real>(cotangents), std::span<const Real>(tangents)));
    return all;
}

TEST_CASE("one cpu::Vm evaluated from 8 threads at once gives the serial results bit for bit") {
    // Four threads per call: the callers share the Vm's pool of three workers, each call's
    // blocks spread over whoever joins it (thread_pool.hpp).
    const Tape tape = record_case(5);
    const cpu::Vm vm(tape, {.threads = 4, .block_lanes = 64});
    constexpr std::size_t points = repetitions(700, 200);  // 11 (4) blocks of 64 lanes
    const std::vector<double> expected64 = every_mode<double>(vm, points);
    const std::vector<float> expected32 = every_mode<float>(vm, points);
    // The guards diverge somewhere, so the merged diverged lists are compared too.
    REQUIRE(expected64.back() > 0);

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < repetitions(3, 1); ++round) {
            if ((t + round) % 2 == 0) {
                if (!same_bits(every_mode<double>(vm, points), expected64)) mismatches.add("double");
            } else {
                if (!same_bits(every_mode<float>(vm, points), expected32)) mismatches.add("float");
            }
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
}

TEST_CASE("cpu::Vms made, used and destroyed on 8 threads at once match the reference VM shared by all") {
    const Tape tape = record_case(3);
    const reference::Vm reference(tape);
    constexpr std::size_t points = 130;
    const std::vector<double> expected = every_mode<double>(reference, points);
    const std::vector<double> expected_cpu = every_mode<double>(cpu::Vm(tape, {.threads = 2}), points);
    REQUIRE(expected.size() == expected_cpu.size());

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < repetitions(3, 1); ++round) {
            // The reference VM from every thread at once: same bits as the serial run.
            if (!same_bits(every_mode<double>(reference, points), expected)) mismatches.add("reference");
            // A Vm of this thread's own, with a pool of 1 + t % 3 threads.
            const cpu::Vm own(tape, {.threads = 1 + t % 3});
            if (!same_bits(every_mode<double>(own, points), expected_cpu)) mismatches.add("own cpu::Vm");
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.count()
                                               << " calls differ, first: " << mismatches.first());
}

TEST_CASE(".tape files saved to one path and loaded from 8 threads at once are always whole") {
    // save_file writes a temporary file and renames it: a load sees the old file or the new
    // one, never half of one.
    const auto folder = std::filesystem::temp_directory_path() /
                        ("tapevm-concurrency-" + std::to_string(static_cast<unsigned long>(::getpid())));
    std::filesystem::create_directories(folder);
    const auto path = folder / "shared.tape";
    std::vector<Tape> tapes;
    for (unsigned k = 0; k < recording_cases; ++k) tapes.push_back(record_case(k));
    save_file(tapes[0], path);

    Mismatches mismatches;
    check_no_errors(run_concurrently([&](unsigned t) {
        for (unsigned round = 0; round < 40; ++round) {
            if (t % 2 == 0) {
                save_file(tapes[(t + round) % tapes.size()], path);
            } else {
                const Tape loaded = load_file(path);  // throws FormatError on a torn file
                bool known = false;
                for (const Tape& tape : tapes) known = known || loaded == tape;
                if (!known) mismatches.add("a loaded tape that no thread saved");
            }
        }
    }));
    CHECK_MESSAGE(mismatches.count() == 0, mismatches.first());
    std::size_t leftovers = 0;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) leftovers += entry.path() != path;
    CHECK(leftovers == 0);  // no temporary file left behind
    std::filesystem::remove_all(folder);
}

}  // namespace
}  // namespace tapevm::test
