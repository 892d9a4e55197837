// The deterministic sum over points of tapevm/reduced.hpp: rows of `width` terms, one row per
// point, summed in f64 along one fixed tree over the point index,
//
//     S[0, n) = S[0, h) + S[h, n),   h = the largest power of two below n,   S[p, p+1) = row p,
//
// whatever the number of rows each add() call brings, and whatever groups of rows come summed
// already (add_node: a whole subtree of 2^level rows). Rows are taken one at a time as a
// binary counter: a finished subtree waits on a stack until its right sibling is finished
// (so at most log2(n) + 1 rows are held), and total() folds the unfinished right edge from
// the right, which is the tree above (the missing right siblings would be zeros).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace tapevm::detail {

/// The tree's sum of x[0, count) (count >= 1): what PairwiseSum gives for these rows.
template <class Real> double tree_sum(const Real* x, std::size_t count) {
    if (count == 1) return static_cast<double>(x[0]);
    std::size_t half = 1;
    while (half * 2 < count) half *= 2;  // the largest power of two below count
    if (half * 2 == count && count <= 1024) {
        // A whole subtree: level by level, adjacent pairs (the same additions, in a loop the
        // compiler vectorises instead of a recursion per pair).
        double level[512];
        for (std::size_t i = 0; i < half; ++i)
            level[i] = static_cast<double>(x[2 * i]) + static_cast<double>(x[2 * i + 1]);
        for (std::size_t width = half; width > 1; width /= 2) {
            for (std::size_t i = 0; i < width / 2; ++i) level[i] = level[2 * i] + level[2 * i + 1];
        }
        return level[0];
    }
    return tree_sum(x, half) + tree_sum(x + half, count - half);
}

class PairwiseSum {
public:
    explicit PairwiseSum(std::size_t width) : width_(width) {}

    std::size_t rows() const { return rows_; }

    /// Adds the next row; `row(k)` gives its term k.
    template <class Row> void add(Row&& row) { add_node(0, 1, row); }

    /// Adds the sum of the next 2^level rows, `sum(k)` giving its term k, computed along this
    /// tree (a group of SharedSums): rows() must be a multiple of 2^level. With `count` below
    /// 2^level, the sum of the last `count` rows (their own tree): nothing may be added after.
    template <class Row> void add_node(unsigned level, std::size_t count, Row&& sum) {
        const std::size_t size = std::size_t{1} << level;
        if (closed_ || rows_ % size != 0 || count == 0 || count > size)
            throw std::logic_error("PairwiseSum: a node out of order");
        Node node{count == size ? level : ~0u, take_buffer()};
        for (std::size_t k = 0; k < width_; ++k) node.sum[k] = static_cast<double>(sum(k));
        // Merge while the top of the stack is this node's left sibling.
        while (!stack_.empty() && stack_.back().level == node.level) {
            Node& left = stack_.back();
            for (std::size_t k = 0; k < width_; ++k) left.sum[k] += node.sum[k];
            ++left.level;
            free_.push_back(std::move(node.sum));
            node = std::move(left);
            stack_.pop_back();
        }
        stack_.push_back(std::move(node));
        rows_ += count;
        closed_ = count != size;
    }

    /// The sum of the rows so far (zeros for none).
    std::vector<double> total() const {
        std::vector<double> sum(width_, 0.0);
        if (stack_.empty()) return sum;
        sum = stack_.back().sum;
        for (std::size_t i = stack_.size() - 1; i-- > 0;) {
            for (std::size_t k = 0; k < width_; ++k) sum[k] = stack_[i].sum[k] + sum[k];
        }
        return sum;
    }

private:
    struct Node {
        unsigned level = 0;
        std::vector<double> sum;
    };

    std::vector<double> take_buffer() {
        if (free_.empty()) return std::vector<double>(width_);
        std::vector<double> buffer = std::move(free_.back());
        free_.pop_back();
        return buffer;
    }

    std::size_t width_;
    std::size_t rows_ = 0;
    bool closed_ = false;  // a partial node came last
    std::vector<Node> stack_;
    std::vector<std::vector<double>> free_;
};

}  // namespace tapevm::detail
