// embedding and embedding_backward on the cpu device. Ids are checked before anything is
// written. The backward is deterministic by construction: tokens are ordered by (id, token
// index), and one block owns every token of an id, adding them in token order.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "cpu/parallel.hpp"

namespace tapevm::nn::detail {

namespace {

void check_ids(const char* kernel, const std::int32_t* ids, std::size_t count, std::size_t vocabulary) {
    for (std::size_t t = 0; t < count; ++t) {
        if (ids[t] < 0 || static_cast<std::size_t>(ids[t]) >= vocabulary) {
            throw Error(std::string(kernel) + ": ids: id " + std::to_string(ids[t]) + " at index " +
                        std::to_string(t) + " is outside [0, " + std::to_string(vocabulary) + ")");
        }
    }
}

}  // namespace

void CpuBackend::embedding(const Tensor& ids, const Tensor& table, const Tensor& out) {
    count_kernel();
    const std::size_t tokens = ids.size();
    const std::size_t vocabulary = table.dim(0);
    const std::size_t width = table.dim(-1);
    const std::int32_t* id = cpu_data<std::int32_t>(ids);
    check_ids("embedding", id, tokens, vocabulary);
    if (tokens == 0 || width == 0) return;
    const std::byte* from = cpu_bytes(table);
    std::byte* to = cpu_bytes(out);
    const std::size_t from_size = dtype_size(table.dtype());
    const std::size_t to_size = dtype_size(out.dtype());
    const bool same = table.dtype() == out.dtype();
    parallel_ranges(*this, tokens, std::max<std::size_t>(1, 8192 / width),
                    [&](std::size_t begin, std::size_t end) {
                        std::vector<float> row(same ? 0 : width);
                        for (std::size_t t = begin; t < end; ++t) {
                            const std::byte* src = from + static_cast<std::size_t>(id[t]) * width * from_size;
                            if (same) {
                                std::memcpy(to + t * width * to_size, src, width * to_size);
                            } else {
                                load_floats(table.dtype(), src, width, row.data());
                                store_floats(out.dtype(), row.data(), width, to + t * width * to_size);
                            }
                        }
                    });
}

void CpuBackend::embedding_backward(const Tensor& ids, const Tensor& dout, const Tensor& dtable) {
    count_kernel();
    const std::size_t tokens = ids.size();
    const std::size_t vocabulary = dtable.dim(0);
    const std::size_t width = dtable.dim(-1);
    const std::int32_t* id = cpu_data<std::int32_t>(ids);
    check_ids("embedding_backward", id, tokens, vocabulary);
    if (tokens == 0 || width == 0) return;
    // Tokens ordered by id, then by position: each run of one id is one group.
    std::vector<std::pair<std::int32_t, std::uint32_t>> order(tokens);
    for (std::size_t t = 0; t < tokens; ++t) order[t] = {id[t], static_cast<std::uint32_t>(t)};
    std::sort(order.begin(), order.end());
    std::vector<std::size_t> group_begin;
    for (std::size_t i = 0; i < tokens; ++i) {
        if (i == 0 || order[i].first != order[i - 1].first) group_begin.push_back(i);
    }
    const std::size_t groups = group_begin.size();
    group_begin.push_back(tokens);

    const bool f32 = dout.dtype() == DType::f32 && dtable.dtype() == DType::f32;
    const std::size_t dout_size = dtype_size(dout.dtype());
    const std::size_t table_size = dtype_size(dtable.dtype());
    parallel_ranges(
        *this, groups, std::max<std::size_t>(1, 4096 / width), [&](std::size_t begin, std::size_t end) {
            std::vector<float> sum(f32 ? 0 : width);
            std::vector<float> row(f32 ? 0 : width);
            for (std::size_t g = begin; g < end; ++g) {
                const auto r = static_cast<std::size_t>(order[group_begin[g]].first);
                float* acc = f32 ? cpu_data<float>(dtable) + r * width : sum.data();
                std::byte* table_row = cpu_bytes(dtable) + r * width * table_size;
                if (!f32) load_floats(dtable.dtype(), table_row, width, acc);
                for (std::size_t i = group_begin[g]; i < group_begin[g + 1]; ++i) {
                    const std::size_t t = order[i].second;
                    if (f32) {
                        row_axpy(1.f, cpu_data<float>(dout) + t * width, acc, width);
                    } else {
                        load_floats(dout.dtype(), cpu_bytes(dout) + t * width * dout_size, width, row.data());
                        row_axpy(1.f, row.data(), acc, width);
                    }
                }
                if (!f32) store_floats(dtable.dtype(), acc, width, table_row);
            }
        });
}

}  // namespace tapevm::nn::detail
