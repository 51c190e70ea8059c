// The RTL backend's harness: the Verilated vta_core with its memory model in C++.
//
// It does cycle for cycle what hw/cocotb_core.py's CoreBench does with hw/memmodel.py
// (backpressure off), so the cycle counter reads the same as under the cocotb bench:
// reset for three cycles, one idle cycle, a one-cycle launch pulse, then per cycle: drive the
// memory model's outputs, settle, stop if `done`, step the model with the core's outputs,
// clock edge.
//
// usage: vta_rtl IN OUT
//   IN : "VTAIMG2\0", u64 dram_size, insn_addr, insn_count, latency, max_burst_beats,
//        outstanding, beat_interval, max_cycles, then dram_size bytes of DRAM
//   OUT: "VTARES1\0", u64 done, cycles, error_code, error_index, bursts, n_counters,
//        n_counters u64 counters (COUNTERS order), u64 violation length, its text,
//        u64 busy_bits (two bits per counter pair that moved in the last window; see below),
//        then the DRAM (dram_size bytes)
//
// DRAM whose size is not a multiple of the bus width is padded to whole beats with zeros, as
// hw/memmodel.py does: reads of the padding return zeros, a write may cover it only with zero
// byte strobes (anything else is a violation), and the DRAM written back has dram_size bytes.
#include "Vvta_core.h"
#include "verilated.h"

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

// Verilator spells a double underscore in a port name as "___05F".
#define PORT(channel, signal) mem___05F##channel##___05F##signal
#define PORT_WR_ACK mem___05Fwr_ack

namespace {

constexpr int kBusBytes = VTA_BUS_BYTES;
constexpr int kBusBits = kBusBytes * 8;

// Bit-field access that works for Verilator's narrow (C/S/I/Q) and wide (VlWide) ports.
template <typename T> void put_bits(T& sig, const uint32_t* words, int nbits) {
    uint64_t v = words[0] | (nbits > 32 ? uint64_t(words[1]) << 32 : 0);
    sig = static_cast<T>(v);
}
template <std::size_t N> void put_bits(VlWide<N>& sig, const uint32_t* words, int) {
    for (std::size_t i = 0; i < N; ++i) sig[i] = words[i];
}
template <typename T> void get_bits(const T& sig, uint32_t* words, int nwords) {
    uint64_t v = static_cast<uint64_t>(sig);
    for (int i = 0; i < nwords; ++i) words[i] = i < 2 ? uint32_t(v >> (32 * i)) : 0;
}
template <std::size_t N> void get_bits(const VlWide<N>& sig, uint32_t* words, int nwords) {
    for (int i = 0; i < nwords; ++i) words[i] = i < int(N) ? sig[i] : 0;
}
uint64_t field(const uint32_t* words, int lo, int width) {
    uint64_t v = 0;
    for (int b = 0; b < width; ++b) {
        int bit = lo + b;
        v |= uint64_t((words[bit / 32] >> (bit % 32)) & 1u) << b;
    }
    return v;
}

volatile std::sig_atomic_t g_stop = 0;  // SIGTERM: the host's timeout; stop and report
void on_term(int) { g_stop = 1; }

struct Violation : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// hw/memmodel.py's MemoryModel without backpressure: reads and writes on their own channels,
// up to `outstanding` bursts in flight each, in-order answers, a beat every `interval` cycles.
// `dram` is padded to whole beats; `size` is the image's DRAM size.
struct Memory {
    struct Burst {
        uint64_t addr, beats_left, first;
    };
    std::vector<uint8_t>& dram;
    uint64_t size;
    uint64_t latency, max_beats, outstanding, interval;
    std::deque<Burst> reads, writes;
    std::deque<uint64_t> acks;
    uint64_t cycle = 0, slot = 0, bursts = 0;
    bool write_turn = false;
    bool rcmd_ready = true, wcmd_ready = true, rd_valid = false, rd_last = false,
         wr_ready = false, wr_ack = false;

    Memory(std::vector<uint8_t>& d, uint64_t sz, uint64_t lat, uint64_t mb, uint64_t n,
           uint64_t k)
        : dram(d), size(sz), latency(lat), max_beats(mb), outstanding(n), interval(k) {}

    void check(uint64_t a, uint64_t beats, bool write) const {
        const char* what = write ? "write" : "read";
        char msg[200];
        uint64_t end = a + beats * kBusBytes;
        if (a % kBusBytes)
            snprintf(msg, sizeof msg, "%s burst at 0x%llx is not aligned to %d bytes", what,
                     (unsigned long long)a, kBusBytes);
        else if (beats < 1 || beats > max_beats)
            snprintf(msg, sizeof msg, "%s burst of %llu beats (max %llu)", what,
                     (unsigned long long)beats, (unsigned long long)max_beats);
        else if (end > dram.size())
            snprintf(msg, sizeof msg,
                     "%s burst [0x%llx, 0x%llx) past the end of DRAM (0x%llx, padded to 0x%llx)",
                     what, (unsigned long long)a, (unsigned long long)end,
                     (unsigned long long)size, (unsigned long long)dram.size());
        else if (a / 4096 != (end - 1) / 4096)
            snprintf(msg, sizeof msg, "%s burst [0x%llx, 0x%llx) crosses a 4 KiB boundary", what,
                     (unsigned long long)a, (unsigned long long)end);
        else
            return;
        throw Violation(msg);
    }
    void update() {
        bool rd = !reads.empty() && cycle >= reads.front().first && cycle >= slot;
        bool wr = !writes.empty() && cycle >= writes.front().first && cycle >= slot;
        if (rd && wr && interval > 1) {
            rd = !write_turn;
            wr = write_turn;
        }
        rcmd_ready = reads.size() < outstanding;
        wcmd_ready = writes.size() + acks.size() < outstanding;
        rd_valid = rd;
        rd_last = rd && reads.front().beats_left == 1;
        wr_ready = wr;
        wr_ack = !acks.empty() && acks.front() == cycle;
    }
    uint64_t rd_addr() const { return reads.front().addr; }
    void step(bool rcmd_valid, uint64_t raddr, uint64_t rlen, bool wcmd_valid, uint64_t waddr,
              uint64_t wlen, bool rd_ready, bool wr_valid, const uint32_t* wr_words) {
        if (wr_ack) acks.pop_front();
        if (rd_valid && rd_ready) {
            Burst& b = reads.front();
            b.addr += kBusBytes;
            if (--b.beats_left == 0) reads.pop_front();
            slot = cycle + interval;
            write_turn = true;
        }
        if (wr_ready && wr_valid) {
            Burst& b = writes.front();
            for (int i = 0; i < kBusBytes; ++i) {
                if (!field(wr_words, kBusBits + i, 1)) continue;
                if (b.addr + i >= size) {
                    char msg[200];
                    snprintf(msg, sizeof msg,
                             "write of byte 0x%llx (strobe set) in the padding past the end of "
                             "DRAM (0x%llx)",
                             (unsigned long long)(b.addr + i), (unsigned long long)size);
                    throw Violation(msg);
                }
                dram[b.addr + i] = uint8_t(field(wr_words, 8 * i, 8));
            }
            b.addr += kBusBytes;
            if (--b.beats_left == 0) {
                writes.pop_front();
                acks.push_back(cycle + latency);
            }
            slot = cycle + interval;
            write_turn = false;
        }
        if (rcmd_ready && rcmd_valid) {
            check(raddr, rlen + 1, false);
            ++bursts;
            reads.push_back({raddr, rlen + 1, cycle + latency});
        }
        if (wcmd_ready && wcmd_valid) {
            check(waddr, wlen + 1, true);
            ++bursts;
            writes.push_back({waddr, wlen + 1, cycle + 1});
        }
        ++cycle;
        update();
    }
};

void tick(Vvta_core* top) {
    top->clk = 0;
    top->eval();
    top->clk = 1;
    top->eval();
}

uint64_t read_u64(FILE* f) {
    uint64_t v;
    if (fread(&v, 8, 1, f) != 1) throw std::runtime_error("truncated input file");
    return v;
}
void write_u64(FILE* f, uint64_t v) { fwrite(&v, 8, 1, f); }

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN OUT\n", argv[0]);
        return 2;
    }
    FILE* in = fopen(argv[1], "rb");
    if (!in) {
        perror(argv[1]);
        return 2;
    }
    char magic[8];
    if (fread(magic, 1, 8, in) != 8 || memcmp(magic, "VTAIMG2", 8) != 0) {
        fprintf(stderr, "%s: not a harness input file\n", argv[1]);
        return 2;
    }
    const uint64_t dram_size = read_u64(in), insn_addr = read_u64(in), insn_count = read_u64(in);
    const uint64_t latency = read_u64(in), max_beats = read_u64(in);
    const uint64_t outstanding = read_u64(in), interval = read_u64(in);
    const uint64_t max_cycles = read_u64(in);
    // Padded to whole beats with zeros (see the top of this file).
    std::vector<uint8_t> dram((dram_size + kBusBytes - 1) / kBusBytes * kBusBytes);
    if (fread(dram.data(), 1, dram_size, in) != dram_size) {
        fprintf(stderr, "%s: truncated DRAM\n", argv[1]);
        return 2;
    }
    fclose(in);

    std::signal(SIGTERM, on_term);
    auto ctx = std::make_unique<VerilatedContext>();
    auto top = std::make_unique<Vvta_core>(ctx.get());
    Memory mem(dram, dram_size, latency, max_beats, outstanding, interval);
    // Words big enough for the widest port (write payload: data + strobes + last).
    constexpr int kWords = (kBusBits + kBusBits / 8 + 1 + 31) / 32 + 2;
    uint32_t words[kWords];

    top->rst = 1;
    top->launch = 0;
    top->PORT(rcmd, ready) = 0;
    top->PORT(wcmd, ready) = 0;
    top->PORT(rd, valid) = 0;
    memset(words, 0, sizeof words);
    put_bits(top->PORT(rd, payload), words, kBusBits + 1);
    top->PORT(wr, ready) = 0;
    top->PORT_WR_ACK = 0;
    for (int i = 0; i < 3; ++i) tick(top.get());
    top->rst = 0;
    tick(top.get());
    top->insn_addr = uint32_t(insn_addr);
    top->insn_count = uint32_t(insn_count);
    top->dram_size = uint32_t(dram_size);
    top->launch = 1;
    tick(top.get());
    top->launch = 0;

    // Busy/stall counters sampled at the start of the last window, to say who was busy on a
    // timeout.
    constexpr uint64_t kWindow = 64;
    uint32_t* counters[] = {&top->fetch_busy,   &top->fetch_stall, &top->load_busy,
                            &top->load_stall,   &top->compute_busy, &top->compute_stall,
                            &top->store_busy,   &top->store_stall, &top->gemm_uops,
                            &top->alu_uops,     &top->mem_busy};
    constexpr int kCounters = sizeof counters / sizeof counters[0];
    uint32_t window_start[kCounters] = {};
    bool done = false;
    std::string violation;
    try {
        uint64_t limit = max_cycles;
        for (uint64_t n = 0; n < limit; ++n) {
            if (g_stop && limit > n + kWindow) limit = n + kWindow;
            top->PORT(rcmd, ready) = mem.rcmd_ready;
            top->PORT(wcmd, ready) = mem.wcmd_ready;
            top->PORT(rd, valid) = mem.rd_valid;
            memset(words, 0, sizeof words);
            if (mem.rd_valid) {
                memcpy(words, dram.data() + mem.rd_addr(), kBusBytes);
                if (mem.rd_last) words[kBusBits / 32] |= 1u << (kBusBits % 32);
            }
            put_bits(top->PORT(rd, payload), words, kBusBits + 1);
            top->PORT(wr, ready) = mem.wr_ready;
            top->PORT_WR_ACK = mem.wr_ack;
            top->clk = 0;
            top->eval();
            if (top->done) {
                done = true;
                break;
            }
            if (limit - n == kWindow)
                for (int i = 0; i < kCounters; ++i) window_start[i] = *counters[i];
            bool rv = top->PORT(rcmd, valid), cv = top->PORT(wcmd, valid);
            bool wv = top->PORT(wr, valid);
            uint32_t rcmd[4] = {}, wcmd[4] = {};
            get_bits(top->PORT(rcmd, payload), rcmd, 2);
            get_bits(top->PORT(wcmd, payload), wcmd, 2);
            uint32_t wr[kWords] = {};
            if (wv) get_bits(top->PORT(wr, payload), wr, kWords);
            mem.step(rv, field(rcmd, 0, 32), field(rcmd, 32, 8), cv, field(wcmd, 0, 32),
                     field(wcmd, 32, 8), top->PORT(rd, ready), wv, wr);
            top->clk = 1;
            top->eval();
        }
    } catch (const Violation& exc) {
        violation = exc.what();
    }
    uint64_t moved = 0;
    for (int i = 0; i < kCounters; ++i)
        if (*counters[i] != window_start[i]) moved |= uint64_t(1) << i;

    FILE* out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 2;
    }
    fwrite("VTARES1", 1, 8, out);
    write_u64(out, done);
    write_u64(out, top->cycles);
    write_u64(out, top->error_code);
    write_u64(out, top->error_index);
    write_u64(out, mem.bursts);
    write_u64(out, kCounters);
    for (int i = 0; i < kCounters; ++i) write_u64(out, *counters[i]);
    write_u64(out, violation.size());
    fwrite(violation.data(), 1, violation.size(), out);
    write_u64(out, moved);
    fwrite(dram.data(), 1, dram_size, out);
    fclose(out);
    top->final();
    return 0;
}
