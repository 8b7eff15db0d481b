// Copyright (c) 2026 hipport contributors
// SPDX-License-Identifier: MIT
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this file, to deal in it without restriction, subject to the MIT License.
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
//
// csv_args: summarise one numeric column of a CSV file.
//
// Usage: csv_args [--sep=,] [--column=cuda_ms] [--top N] FILE...
//
// Example input, as written by a timing harness around the cuda samples:
//
//   # device: some GPU, cuda driver 13.0
//   kernel,n,cuda_ms,cpu_ms
//   vector_add,16777216,0.41,18.2
//
// This is ordinary host C++ (no kernels, no device memory, no CUDA runtime),
// so it must come through a CUDA-to-HIP conversion byte for byte unchanged.

#include "csv_args.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <utility>

namespace csvargs {

ArgParser::ArgParser(int argc, const char* const* argv) {
    if (argc > 0) program_ = argv[0];
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        if (arg.size() > 2 && arg.compare(0, 2, "--") == 0) {
            std::string body = arg.substr(2);
            std::size_t eq = body.find('=');
            if (eq != std::string::npos) {
                options_[body.substr(0, eq)] = body.substr(eq + 1);
            } else if (i + 1 < argc && argv[i + 1][0] != '-') {
                options_[body] = argv[++i];
            } else {
                options_[body] = "";  // bare flag
            }
        } else {
            positional_.push_back(arg);
        }
    }
}

bool ArgParser::has(const std::string& key) const {
    return options_.count(key) != 0;
}

std::string ArgParser::get(const std::string& key,
                           const std::string& fallback) const {
    auto it = options_.find(key);
    return it == options_.end() ? fallback : it->second;
}

long ArgParser::get_int(const std::string& key, long fallback) const {
    auto it = options_.find(key);
    if (it == options_.end() || it->second.empty()) return fallback;
    errno = 0;
    char* end = nullptr;
    long v = std::strtol(it->second.c_str(), &end, 10);
    if (errno != 0 || end == it->second.c_str() || *end != '\0') {
        std::fprintf(stderr, "warning: --%s=%s is not an integer\n",
                     key.c_str(), it->second.c_str());
        return fallback;
    }
    return v;
}

double ArgParser::get_double(const std::string& key, double fallback) const {
    auto it = options_.find(key);
    if (it == options_.end() || it->second.empty()) return fallback;
    char* end = nullptr;
    double v = std::strtod(it->second.c_str(), &end);
    return (end == it->second.c_str()) ? fallback : v;
}

bool split_csv_line(const std::string& line, char sep, Row& out) {
    out.clear();
    std::string field;
    bool in_quotes = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char ch = line[i];
        if (in_quotes) {
            if (ch == '"') {
                if (i + 1 < line.size() && line[i + 1] == '"') {
                    field.push_back('"');
                    ++i;
                } else {
                    in_quotes = false;
                }
            } else {
                field.push_back(ch);
            }
        } else if (ch == '"') {
            in_quotes = true;
        } else if (ch == sep) {
            out.push_back(field);
            field.clear();
        } else if (ch != '\r') {
            field.push_back(ch);
        }
    }
    out.push_back(field);
    return !in_quotes;
}

int Table::column(const std::string& name) const {
    for (std::size_t i = 0; i < header.size(); ++i) {
        if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
}

bool read_csv(const std::string& path, char sep, Table& table,
              std::string& error) {
    std::ifstream in(path);
    if (!in) {
        error = "cannot open " + path;
        return false;
    }
    std::string line;
    std::size_t lineno = 0;
    bool have_header = false;
    while (std::getline(in, line)) {
        ++lineno;
        if (line.empty() || line[0] == '#') continue;
        Row row;
        if (!split_csv_line(line, sep, row)) {
            std::ostringstream msg;
            msg << path << ":" << lineno << ": unterminated quoted field";
            error = msg.str();
            return false;
        }
        if (!have_header) {
            table.header = std::move(row);
            have_header = true;
        } else {
            table.rows.push_back(std::move(row));
        }
    }
    if (!have_header) {
        error = path + ": no header line";
        return false;
    }
    return true;
}

ColumnStats summarise(const Table& table, int column) {
    ColumnStats st;
    double sum = 0.0;
    double sum_sq = 0.0;
    for (const Row& row : table.rows) {
        if (column < 0 || static_cast<std::size_t>(column) >= row.size()) {
            ++st.skipped;
            continue;
        }
        const std::string& cell = row[static_cast<std::size_t>(column)];
        char* end = nullptr;
        double v = std::strtod(cell.c_str(), &end);
        if (cell.empty() || end == cell.c_str()) {
            ++st.skipped;
            continue;
        }
        if (st.count == 0) {
            st.min = st.max = v;
        } else {
            st.min = std::min(st.min, v);
            st.max = std::max(st.max, v);
        }
        sum += v;
        sum_sq += v * v;
        ++st.count;
    }
    if (st.count > 0) {
        st.mean = sum / static_cast<double>(st.count);
        double var = sum_sq / static_cast<double>(st.count) - st.mean * st.mean;
        st.stddev = var > 0.0 ? std::sqrt(var) : 0.0;
    }
    return st;
}

}  // namespace csvargs

int main(int argc, char** argv) {
    csvargs::ArgParser args(argc, argv);
    if (args.has("help") || args.positional().empty()) {
        std::cout << "usage: " << args.program()
                  << " [--sep=,] [--column=cuda_ms] [--top N] FILE...\n"
                  << "Summarise a timing column from cuda benchmark CSVs.\n";
        return args.has("help") ? 0 : 1;
    }

    const std::string sep_text = args.get("sep", ",");
    const char sep = sep_text == "\\t" ? '\t' : sep_text.empty() ? ',' : sep_text[0];
    const std::string cuda_column = args.get("column", "cuda_ms");
    const long top = args.get_int("top", 3);

    int status = 0;
    for (const std::string& path : args.positional()) {
        csvargs::Table table;
        std::string error;
        if (!csvargs::read_csv(path, sep, table, error)) {
            std::cerr << "error: " << error << "\n";
            status = 1;
            continue;
        }
        const int col = table.column(cuda_column);
        if (col < 0) {
            std::cerr << path << ": no column named '" << cuda_column << "'\n";
            status = 1;
            continue;
        }
        const csvargs::ColumnStats st = csvargs::summarise(table, col);
        std::printf("%s: %s over %zu rows (%zu skipped): min %.4g max %.4g "
                    "mean %.4g sd %.4g\n",
                    path.c_str(), cuda_column.c_str(), st.count, st.skipped,
                    st.min, st.max, st.mean, st.stddev);

        // Slowest rows first, labelled by the first column (the kernel name).
        std::vector<std::pair<double, std::string>> ranked;
        for (const csvargs::Row& row : table.rows) {
            if (static_cast<std::size_t>(col) < row.size() && !row.empty()) {
                char* end = nullptr;
                double v = std::strtod(row[col].c_str(), &end);
                if (end != row[col].c_str()) ranked.emplace_back(v, row[0]);
            }
        }
        std::sort(ranked.begin(), ranked.end(),
                  [](const auto& a, const auto& b) { return a.first > b.first; });
        for (long i = 0; i < top && i < static_cast<long>(ranked.size()); ++i) {
            std::printf("  #%ld %-24s %.4g\n", i + 1,
                        ranked[static_cast<std::size_t>(i)].second.c_str(),
                        ranked[static_cast<std::size_t>(i)].first);
        }
    }
    return status;
}
