// The cpu device's memory, reduction, row, embedding and loss kernels against the reference
// device, at awkward shapes (1, 7, 63, 65, 129, 0), in f32, f16 and bf16; each also repeatable
// and the same with 1 and 2 threads (cpu_cases.hpp).
#include <limits>

#include "cpu_cases.hpp"
#include "tapevm/error.hpp"

namespace tapevm::nn::test {

namespace {

constexpr DType float_dtypes[] = {DType::f32, DType::f16, DType::bf16};
constexpr double f32_tolerance = 2e-6;

}  // namespace

TEST_CASE("cpu memory kernels: zero, fill, copy with conversion") {
    for (DType dtype : float_dtypes) {
        check_case("fill", dtype, 0, [](const Env& env) {
            Tensor x = env.random({65, 3}, 1);
            fill(x, 0.3);
            Tensor z = env.random({7}, 2);
            zero(z);
            return std::vector<Tensor>{x, z};
        });
        check_case("copy", dtype, 0, [](const Env& env) {
            Tensor x = env.random({129, 7}, 3, -100, 100);
            Tensor y = env.device.zeros({7, 129}, env.reference() ? DType::f64 : DType::f32);
            copy(x, y);
            Tensor back = env.zeros({7 * 129});
            copy(y, back);
            return std::vector<Tensor>{y, back};
        });
    }
    SUBCASE("conversions between f32, f16, bf16 and i32") {
        const Device cpu = cpu_device(2);
        const std::vector<double> values{0.1, -2.5, 65504, 1e-8, 3.99, -7};
        Tensor f = cpu.upload({6}, std::span<const double>(values), DType::f32);
        for (DType dtype : {DType::f16, DType::bf16, DType::i32}) {
            Tensor g = cpu.empty({2, 3}, dtype);
            copy(f, g);
            const std::vector<double> got = g.to_double();
            for (std::size_t i = 0; i < values.size(); ++i) {
                CHECK(got[i] == round_to(dtype, round_to(DType::f32, values[i])));
            }
        }
        Tensor ids =
            cpu.upload({3}, std::span<const std::int32_t>(std::vector<std::int32_t>{-3, 0, 16777217}));
        Tensor as_float = cpu.empty({3}, DType::f32);
        copy(ids, as_float);
        CHECK(as_float.to_double() == std::vector<double>{-3, 0, 16777216});
        Tensor huge =
            cpu.upload({3}, std::span<const double>(std::vector<double>{3e9, -3e9, -2.9}), DType::f32);
        Tensor saturated = cpu.empty({3}, DType::i32);
        copy(huge, saturated);  // out of range saturates (no undefined conversion)
        const std::vector<std::int32_t> got = saturated.to_int();
        CHECK(huge.to_double()[0] == 3e9);
        CHECK(got[0] == 2147483647);
        CHECK(got[1] == -2147483647 - 1);
        CHECK(got[2] == -2);
    }
}

TEST_CASE("cpu bias_add, add_assign, reduce_sum, transpose_2d, global_norm_squared") {
    for (DType dtype : float_dtypes) {
        check_case("bias_add", dtype, f32_tolerance, [](const Env& env) {
            Tensor x = env.random({3, 7, 65}, 4);
            bias_add(x, env.random({65}, 5));
            return std::vector<Tensor>{x};
        });
        check_case("add_assign", dtype, f32_tolerance, [](const Env& env) {
            Tensor x = env.random({129, 7}, 6);
            add_assign(x, env.random({7, 129}, 7), -0.75);
            return std::vector<Tensor>{x};
        });
        check_case("reduce_sum", dtype, 1e-5, [](const Env& env) {
            Tensor x = env.random({7, 129, 65}, 8);
            std::vector<Tensor> outs;
            for (std::size_t axis = 0; axis < 3; ++axis) {
                Shape shape = x.shape();
                shape.erase(shape.begin() + static_cast<std::ptrdiff_t>(axis));
                outs.push_back(env.zeros(shape));
                reduce_sum(x, outs.back(), axis);
            }
            Tensor long_row = env.random({2, 3000}, 9);
            Tensor sums = env.random({2}, 10);
            reduce_sum(long_row, sums, 1, true);
            outs.push_back(sums);
            Tensor empty_axis = env.zeros({0, 5});
            Tensor zeros_out = env.random({5}, 11);
            reduce_sum(empty_axis, zeros_out, 0);
            outs.push_back(zeros_out);
            return outs;
        });
        check_case("transpose_2d", dtype, 0, [](const Env& env) {
            Tensor x = env.random({65, 129}, 12);
            Tensor y = env.zeros({129, 65});
            transpose_2d(x, y);
            Tensor xb = env.random({3, 7, 33}, 13);
            Tensor yb = env.zeros({3, 33, 7});
            transpose_2d(xb, yb);
            return std::vector<Tensor>{y, yb};
        });
        check_case("global_norm_squared", dtype, 1e-6, [](const Env& env) {
            const std::vector<Tensor> tensors{env.random({129, 65}, 14), env.random({1}, 15), env.zeros({0}),
                                              env.random({40000}, 16)};
            Tensor out = env.stats({1});
            global_norm_squared(tensors, out);
            return std::vector<Tensor>{out};
        });
    }
}

TEST_CASE("cpu softmax and softmax_backward") {
    constexpr double inf = std::numeric_limits<double>::infinity();
    for (DType dtype : float_dtypes) {
        for (std::size_t n : {1, 7, 65, 1000}) {
            check_case("softmax n=" + std::to_string(n), dtype, f32_tolerance, [n](const Env& env) {
                Tensor x = env.random({33, n}, 20, -8, 8);
                Tensor y = env.zeros({33, n});
                softmax(x, y);
                Tensor z = env.random({3, n}, 21, -4, 4);
                softmax(z, z);  // in place
                return std::vector<Tensor>{y, z};
            });
            check_case("softmax_backward n=" + std::to_string(n), dtype, 4 * f32_tolerance,
                       [n](const Env& env) {
                           Tensor dx = env.random({33, n}, 24);
                           softmax_backward(env.random({33, n}, 22, 0, 1), env.random({33, n}, 23), dx);
                           return std::vector<Tensor>{dx};
                       });
        }
        check_case("softmax edge rows", dtype, f32_tolerance, [](const Env& env) {
            Tensor x = env.values({4, 5}, {-inf, -inf, -inf, -inf, -inf,  // all masked: zeros
                                           0,    -inf, 1,    -inf, 2,     // some masked
                                           1e4,  -1e4, 1e4,  0,    1,     // large logits
                                           -1e4, -1e4, -1e4, -1e4, -1e4});
            Tensor y = env.zeros({4, 5});
            softmax(x, y);
            return std::vector<Tensor>{y};
        });
    }
}

TEST_CASE("cpu layer_norm, rms_norm and their backward") {
    for (DType dtype : float_dtypes) {
        for (const Shape& shape : {Shape{1, 7}, Shape{70, 129}, Shape{2, 33, 63}}) {
            const std::string where = shape_string(shape);
            const std::size_t n = shape.back();
            const std::size_t rows = element_count(shape) / n;
            check_case("layer_norm " + where, dtype, 1e-5, [&](const Env& env) {
                Tensor x = env.random(shape, 30, -3, 5);
                Tensor y = env.zeros(shape);
                Tensor mean = env.stats({rows}), rstd = env.stats({rows});
                layer_norm(x, env.random({n}, 31), env.random({n}, 32), y, mean, rstd);
                Tensor x2 = env.random(shape, 33);
                Tensor rstd2 = env.stats({rows});
                rms_norm(x2, env.random({n}, 34), x2, rstd2);  // in place
                Tensor y3 = env.zeros(shape);
                layer_norm(env.random(shape, 35), env.random({n}, 36), Tensor(), y3, env.stats({rows}),
                           env.stats({rows}), 1e-3);
                return std::vector<Tensor>{y, mean, rstd, x2, rstd2, y3};
            });
            check_case("layer_norm_backward " + where, dtype, 2e-5, [&](const Env& env) {
                Tensor dx = env.random(shape, 40), dgamma = env.random({n}, 41), dbeta = env.random({n}, 42);
                layer_norm_backward(env.random(shape, 43), env.random(shape, 44), env.random({n}, 45),
                                    env.random_stats({rows}, 46, -0.5, 0.5),
                                    env.random_stats({rows}, 47, 0.5, 2), dx, dgamma, dbeta);
                Tensor dgamma_only = env.zeros({n});
                layer_norm_backward(env.random(shape, 43), env.random(shape, 44), env.random({n}, 45),
                                    env.random_stats({rows}, 46, -0.5, 0.5),
                                    env.random_stats({rows}, 47, 0.5, 2), Tensor(), dgamma_only, Tensor());
                Tensor rdx = env.random(shape, 48), rdgamma = env.random({n}, 49);
                rms_norm_backward(env.random(shape, 50), env.random(shape, 51), env.random({n}, 52),
                                  env.random_stats({rows}, 53, 0.5, 2), rdx, rdgamma);
                return std::vector<Tensor>{dx, dgamma, dbeta, dgamma_only, rdx, rdgamma};
            });
        }
    }
}

TEST_CASE("cpu embedding and cross_entropy") {
    for (DType dtype : float_dtypes) {
        check_case("embedding", dtype, f32_tolerance, [](const Env& env) {
            const std::vector<std::int32_t> ids = random_ids(130, 7, 60);  // many repeats
            Tensor out = env.zeros({10, 13, 65});
            Tensor table = env.random({7, 65}, 61);
            embedding(env.ids({10, 13}, ids), table, out);
            Tensor dtable = env.random({7, 65}, 62);
            embedding_backward(env.ids({10, 13}, ids), env.random({10, 13, 65}, 63), dtable);
            return std::vector<Tensor>{out, dtable};
        });
        check_case("cross_entropy", dtype, 1e-5, [](const Env& env) {
            std::vector<std::int32_t> targets = random_ids(65, 129, 70);
            targets[3] = -1;
            targets[64] = -1;
            Tensor logits = env.random({65, 129}, 71, -6, 6);
            Tensor losses = env.stats({65});
            Tensor dlogits = env.zeros({65, 129});
            cross_entropy(logits, env.ids({65}, targets), losses, dlogits, -1, 0.5);
            Tensor in_place = env.random({5, 129}, 72, -1e4, 1e4);
            Tensor losses2 = env.stats({5});
            cross_entropy(in_place, env.ids({5}, {0, 7, 128, 5, 5}), losses2, in_place, 5);
            Tensor losses3 = env.stats({1});
            cross_entropy(env.random({1, 1}, 73), env.ids({1}, {0}), losses3, Tensor());
            return std::vector<Tensor>{losses, dlogits, in_place, losses2, losses3};
        });
    }
}

TEST_CASE("cpu ids out of range name the kernel and the id") {
    const Device cpu = cpu_device(2);
    Tensor table = cpu.zeros({7, 4}, DType::f32);
    Tensor out = cpu.zeros({3, 4}, DType::f32);
    Tensor bad = cpu.upload({3}, std::span<const std::int32_t>(std::vector<std::int32_t>{0, 7, 1}));
    Tensor negative = cpu.upload({3}, std::span<const std::int32_t>(std::vector<std::int32_t>{0, 1, -2}));
    CHECK_THROWS_WITH_AS(embedding(bad, table, out), doctest::Contains("embedding: ids: id 7 at index 1"),
                         Error);
    CHECK_THROWS_WITH_AS(embedding_backward(negative, out, table),
                         doctest::Contains("embedding_backward: ids: id -2"), Error);
    CHECK(table.to_double() == std::vector<double>(28, 0.0));  // nothing written
    Tensor logits = cpu.zeros({3, 7}, DType::f32);
    Tensor losses = cpu.zeros({3}, DType::f32);
    CHECK_THROWS_WITH_AS(cross_entropy(logits, bad, losses, Tensor()),
                         doctest::Contains("cross_entropy: targets: id 7"), Error);
    CHECK_THROWS_AS(cross_entropy(logits, negative, losses, Tensor(), -1), Error);
}

TEST_CASE("cpu device: memory counters, stream statistics, dtypes") {
    const Device cpu = cpu_device(2);
    CHECK(cpu.kind() == DeviceKind::cpu);
    CHECK(cpu.name() == "cpu (2 threads)");
    CHECK(cpu.supports(DType::f32));
    CHECK(cpu.supports(DType::bf16));
    CHECK(!cpu.supports(DType::f64));
    CHECK(cpu.accumulate_dtype() == DType::f32);
    const std::uint64_t live = cpu.live_memory();
    const std::uint64_t kernels = cpu.stream_stats().kernels;
    {
        Tensor x = cpu.empty({1000}, DType::f32);
        CHECK(cpu.live_memory() == live + 4000);
        CHECK(cpu.peak_memory() >= live + 4000);
        CHECK(reinterpret_cast<std::uintptr_t>(x.storage_handle().get()) != 0);
        fill(x, 2);
        zero(x);
    }
    CHECK(cpu.live_memory() == live);
    CHECK(cpu.stream_stats().kernels >= kernels + 2);
    cpu.reset_peak_memory();
    CHECK(cpu.peak_memory() == cpu.live_memory());
}

}  // namespace tapevm::nn::test
