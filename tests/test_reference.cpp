// The reference VM's evaluation modes against each other and against finite differences:
// forward-mode Jacobian = reverse-mode Jacobian, jvp = J v, vjp = w^T J, gradient = the
// Jacobian's row, hvp = finite differences of the gradient (and symmetric); batch layouts,
// shape errors, float, and concurrent use of one Vm.
#include <cmath>
#include <random>
#include <thread>

#include <doctest/doctest.h>

#include "tapevm/error.hpp"
#include "tapevm/examples.hpp"
#include "tapevm/var.hpp"
#include "test_util.hpp"

using namespace tapevm;
using test::close;

namespace {

struct Workload {
    std::string name;
    Tape tape;
    std::vector<double> base;    // a typical point
    std::vector<double> params;  // shared parameters
};

std::vector<Workload> workloads() {
    std::vector<double> x16(16);
    for (std::size_t i = 0; i < 16; ++i) x16[i] = 0.3 + 0.05 * static_cast<double>(i);
    const std::vector<double> ba(examples::ba_test_inputs.begin(), examples::ba_test_inputs.end());
    const std::vector<double> feature(examples::ba_test_feature.begin(), examples::ba_test_feature.end());
    // A function with several outputs and more outputs than inputs (forward mode wins).
    const Tape wide = record(2, [](std::span<const Var> x) {
        return std::vector<Var>{sin(x[0]) * x[1], exp(x[0] - x[1]), x[0] * x[0] * x[1], atan2(x[1], x[0]),
                                hypot(x[0], x[1])};
    });
    return {
        {"ba", examples::example_tape("ba"), ba, {}},
        {"ba-param", examples::example_tape("ba-param"), ba, feature},
        {"rosenbrock16", examples::example_tape("rosenbrock16"), x16, {}},
        {"trig16", examples::example_tape("trig16"), x16, {}},
        {"wide", wide, {0.7, -1.3}, {}},
    };
}

// `base` perturbed by a few percent.
std::vector<double> near(const std::vector<double>& base, std::mt19937_64& rng) {
    std::uniform_real_distribution<double> factor(0.97, 1.03);
    std::vector<double> x(base);
    for (double& v : x) v *= factor(rng);
    return x;
}

double dot(std::span<const double> a, std::span<const double> b) {
    double sum = 0;
    for (std::size_t k = 0; k < a.size(); ++k) sum += a[k] * b[k];
    return sum;
}

}  // namespace

TEST_CASE("forward and reverse Jacobians agree; jvp, vjp and gradient are its products") {
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    for (const Workload& w : workloads()) {
        INFO(w.name);
        const reference::Vm vm(w.tape);
        const std::size_t n = w.tape.input_count();
        const std::size_t m = w.tape.output_count();
        for (int trial = 0; trial < 5; ++trial) {
            const auto x = near(w.base, rng);
            const auto forward_jac = test::jacobian(vm, x, JacobianMode::forward, w.params);
            const auto reverse_jac = test::jacobian(vm, x, JacobianMode::reverse, w.params);
            const auto automatic = test::jacobian(vm, x, JacobianMode::automatic, w.params);
            for (std::size_t k = 0; k < m * n; ++k) {
                CHECK(close(forward_jac[k], reverse_jac[k], 1e-13));
                CHECK(close(automatic[k], reverse_jac[k], 1e-13));
            }
            std::vector<double> v(n), u(m), jv(m), uj(n);
            for (double& e : v) e = normal(rng);
            for (double& e : u) e = normal(rng);
            vm.jvp(single_point<double>(x, w.params), std::span<const double>(v), std::span<double>(jv));
            vm.vjp(single_point<double>(x, w.params), std::span<const double>(u), std::span<double>(uj));
            for (std::size_t k = 0; k < m; ++k) {
                CHECK(close(jv[k], dot(std::span(reverse_jac).subspan(k * n, n), v), 1e-12));
            }
            for (std::size_t i = 0; i < n; ++i) {
                double expected = 0;
                for (std::size_t k = 0; k < m; ++k) expected += u[k] * reverse_jac[k * n + i];
                CHECK(close(uj[i], expected, 1e-12));
            }
            // Finite differences of the function, column by column.
            for (std::size_t i = 0; i < n; ++i) {
                for (std::size_t k = 0; k < m; ++k) {
                    const double fd = test::central_difference(
                        [&](std::span<const double> at) { return test::forward(vm, at, w.params)[k]; }, x, i);
                    CHECK(close(reverse_jac[k * n + i], fd, 1e-6));
                }
            }
            if (m == 1) {
                std::vector<double> gradient(n);
                vm.gradient(single_point<double>(x, w.params), std::span<double>(gradient));
                CHECK(gradient == reverse_jac);
            }
        }
    }
}

TEST_CASE("hvp equals finite differences of the gradient and is symmetric") {
    std::mt19937_64 rng(11);
    std::normal_distribution<double> normal;
    for (const Workload& w : workloads()) {
        INFO(w.name);
        const reference::Vm vm(w.tape);
        const std::size_t n = w.tape.input_count();
        const std::size_t m = w.tape.output_count();
        for (int trial = 0; trial < 4; ++trial) {
            const auto x = near(w.base, rng);
            std::vector<double> cotangent(m), v(n), u(n), hv(n), hu(n);
            for (double& e : cotangent) e = normal(rng);
            for (double& e : v) e = normal(rng);
            for (double& e : u) e = normal(rng);
            const auto point = single_point<double>(x, w.params);
            vm.hvp(point, std::span<const double>(cotangent), std::span<const double>(v),
                   std::span<double>(hv));
            vm.hvp(point, std::span<const double>(cotangent), std::span<const double>(u),
                   std::span<double>(hu));
            CHECK(close(dot(u, hv), dot(v, hu), 1e-9 * (1 + std::fabs(dot(u, hv)))));
            // d/dh vjp(x + h v) at h = 0, by central differences.
            const double h = 1e-6;
            std::vector<double> up(x), down(x), g_up(n), g_down(n);
            for (std::size_t i = 0; i < n; ++i) {
                up[i] += h * v[i];
                down[i] -= h * v[i];
            }
            vm.vjp(single_point<double>(up, w.params), std::span<const double>(cotangent),
                   std::span<double>(g_up));
            vm.vjp(single_point<double>(down, w.params), std::span<const double>(cotangent),
                   std::span<double>(g_down));
            double scale = 1;
            for (double e : hv) scale = std::fmax(scale, std::fabs(e));
            for (std::size_t i = 0; i < n; ++i) {
                const double fd = (g_up[i] - g_down[i]) / (2 * h);
                CHECK_MESSAGE(std::fabs(hv[i] - fd) <= 2e-5 * scale, "component ", i, ": hvp ", hv[i],
                              ", fd ", fd);
            }
        }
    }
}

TEST_CASE("hvp of rosenbrock16 equals its hand-written Hessian") {
    const reference::Vm vm(examples::example_tape("rosenbrock16"));
    std::vector<double> x(16), v(16), hv(16);
    for (std::size_t i = 0; i < 16; ++i) {
        x[i] = 0.2 * static_cast<double>(i) - 1.1;
        v[i] = std::cos(static_cast<double>(i));
    }
    const std::vector<double> one = {1.0};
    vm.hvp(single_point<double>(x), std::span<const double>(one), std::span<const double>(v),
           std::span<double>(hv));
    // H of sum 100 (x[i+1] - x[i]^2)^2 + (1 - x[i])^2.
    std::vector<double> expected(16, 0.0);
    for (std::size_t i = 0; i < 15; ++i) {
        const double hii = 1200 * x[i] * x[i] - 400 * x[i + 1] + 2;
        const double hij = -400 * x[i];
        expected[i] += hii * v[i] + hij * v[i + 1];
        expected[i + 1] += hij * v[i] + 200 * v[i + 1];
    }
    for (std::size_t i = 0; i < 16; ++i) CHECK(close(hv[i], expected[i], 1e-12));
}

TEST_CASE("a batch gives the same results as its points one at a time") {
    const Workload w = workloads()[1];  // ba-param: per-point parameters
    const reference::Vm vm(w.tape);
    std::mt19937_64 rng(3);
    for (std::size_t points : {1, 7, 64}) {
        std::vector<double> inputs, params;
        for (std::size_t p = 0; p < points; ++p) {
            const auto x = near(w.base, rng);
            const auto f = near(w.params, rng);
            inputs.insert(inputs.end(), x.begin(), x.end());
            params.insert(params.end(), f.begin(), f.end());
        }
        std::vector<double> jacobians(points * 30);
        const Report report =
            vm.jacobian(Batch<double>{points, inputs, params}, std::span<double>(jacobians));
        CHECK(report.all_guards_hold());
        for (std::size_t p = 0; p < points; ++p) {
            const auto one = test::jacobian(vm, std::span(inputs).subspan(p * 15, 15),
                                            JacobianMode::automatic, std::span(params).subspan(p * 2, 2));
            CHECK(
                std::equal(one.begin(), one.end(), jacobians.begin() + static_cast<std::ptrdiff_t>(p * 30)));
        }
    }
    std::vector<double> none;
    CHECK(vm.forward(Batch<double>{0, {}, {}}, std::span<double>(none)).all_guards_hold());
}

TEST_CASE("wrong sizes throw ShapeError naming expected and given sizes") {
    const reference::Vm vm(examples::example_tape("ba"));
    const std::vector<double> x(30);  // two points
    std::vector<double> out(3);
    try {
        vm.forward(Batch<double>{2, x, {}}, std::span<double>(out));
        FAIL("no exception");
    } catch (const ShapeError& error) {
        CHECK(error.expected() == 4);
        CHECK(error.given() == 3);
        CHECK(std::string(error.what()).find("outputs") != std::string::npos);
    }
    std::vector<double> jac(60);
    CHECK_THROWS_AS(vm.jacobian(Batch<double>{3, x, {}}, std::span<double>(jac)), ShapeError);
    std::vector<double> gradient(30);
    CHECK_THROWS_AS(vm.gradient(Batch<double>{2, x, {}}, std::span<double>(gradient)), Unsupported);
    std::vector<double> tangents(29), results(4);
    CHECK_THROWS_AS(
        vm.jvp(Batch<double>{2, x, {}}, std::span<const double>(tangents), std::span<double>(results)),
        ShapeError);
    const std::vector<double> params(2);
    CHECK_THROWS_AS(vm.forward(Batch<double>{2, x, params}, std::span<double>(out)), ShapeError);
}

TEST_CASE("float evaluation tracks double") {
    const reference::Vm vm(examples::example_tape("trig16"));
    std::vector<double> x(16);
    for (std::size_t i = 0; i < 16; ++i) x[i] = std::sin(static_cast<double>(i));
    std::vector<float> x32(x.begin(), x.end());
    std::vector<double> x64(x32.begin(), x32.end());
    std::vector<float> g32(16);
    std::vector<double> g64(16);
    vm.gradient(single_point<float>(x32), std::span<float>(g32));
    vm.gradient(single_point<double>(x64), std::span<double>(g64));
    for (std::size_t i = 0; i < 16; ++i) CHECK(close(g32[i], g64[i], 1e-5));
}

TEST_CASE("one Vm used from several threads at once") {
    const reference::Vm vm(examples::example_tape("ba-param"));
    const std::size_t points = 200;
    std::vector<double> inputs, params;
    std::mt19937_64 rng(5);
    for (std::size_t p = 0; p < points; ++p) {
        const auto x =
            near(std::vector<double>(examples::ba_test_inputs.begin(), examples::ba_test_inputs.end()), rng);
        inputs.insert(inputs.end(), x.begin(), x.end());
        params.push_back(-500 + static_cast<double>(p));
        params.push_back(150 - static_cast<double>(p));
    }
    std::vector<double> expected(points * 30);
    vm.jacobian(Batch<double>{points, inputs, params}, std::span<double>(expected));
    std::vector<std::vector<double>> results(4, std::vector<double>(points * 30));
    std::vector<std::thread> threads;
    for (auto& result : results) {
        threads.emplace_back([&] {
            for (int repeat = 0; repeat < 5; ++repeat) {
                vm.jacobian(Batch<double>{points, inputs, params}, std::span<double>(result));
            }
        });
    }
    for (auto& thread : threads) thread.join();
    for (const auto& result : results) CHECK(result == expected);
}
