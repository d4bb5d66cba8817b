// p4cc sim benchmark, ns-3 side: DCTCP on a dumbbell, for speed and as an
// independent cross-check of p4cc's virtual-time simulator.
//
//   sender_0 ─┐
//   sender_1 ─┼── switch ──(bottleneck)── receiver
//   ...      ─┘
//
// Every link runs at rate C (point-to-point, full duplex) with one-way
// propagation delay RTT/4, so the propagation round trip sender → switch →
// receiver → switch → sender is exactly RTT (serialisation comes on top).
// Each sender runs one ns3::TcpDctcp bulk transfer (BulkSendApplication,
// unlimited) to the receiver for the whole run. The switch's port towards
// the receiver is the bottleneck: a RedQueueDisc set up as a plain threshold
// marker (QW = 1, MinTh = MaxTh, Gentle off, UseEcn on, UseHardDrop off:
// every ECT packet arriving while the queue holds >= threshold packets gets
// CE; nothing is dropped until the buffer is full).
//
// Queue semantics follow p4cc's (bmv2's) egress queue: the queue is the
// packets *waiting*, excluding the one being serialised, counted when a
// packet arrives, before adding it (enq_qdepth), and a packet is marked when
// that count is >= K. In ns-3 the waiting packets sit in two places: the
// queue disc and the device's transmit queue, which is set to 1 packet; while
// the link is busy the device queue always holds its one packet, so the
// queue disc is one short of the waiting count and marks at K - 1. The
// sampled queue is queue disc + device queue, before the arriving packet.
//
// At the end it prints ONE JSON line to stdout (and writes the same object,
// plus the histogram of queue samples, to --out if given).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sys/resource.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace ns3;

namespace
{

bool g_measuring = false;
Ptr<QueueDisc> g_qdisc;        // bottleneck queue disc
Ptr<Queue<Packet>> g_devQueue; // bottleneck device transmit queue
std::vector<uint64_t> g_qhist; // queue samples: count per depth (packets)
uint64_t g_bottleneckTxBytes = 0;
uint64_t g_bottleneckTxPkts = 0;
uint64_t g_marks = 0;
std::vector<uint64_t> g_rxBytes; // per flow, payload bytes at the receiver
std::ofstream g_qlog;            // optional: every queue sample, warm-up included

// Queue disc "Enqueue": fires once the arriving packet is in the queue disc,
// before the queue disc is run, so the count before arrival is one less.
void
OnEnqueue(Ptr<const QueueDiscItem>)
{
    uint32_t q = g_qdisc->GetNPackets() - 1 + g_devQueue->GetNPackets();
    if (g_qlog.is_open())
    {
        g_qlog << Simulator::Now().GetNanoSeconds() << ' ' << q << '\n';
    }
    if (!g_measuring)
    {
        return;
    }
    if (q >= g_qhist.size())
    {
        g_qhist.resize(q + 1, 0);
    }
    g_qhist[q]++;
}

void
OnMark(Ptr<const QueueDiscItem>, const char*)
{
    if (g_measuring)
    {
        g_marks++;
    }
}

void
OnBottleneckTxEnd(Ptr<const Packet> p)
{
    if (g_measuring)
    {
        g_bottleneckTxBytes += p->GetSize();
        g_bottleneckTxPkts++;
    }
}

void
OnSinkRx(std::size_t flow, Ptr<const Packet> p, const Address&)
{
    if (g_measuring)
    {
        g_rxBytes[flow] += p->GetSize();
    }
}

void
StartMeasuring()
{
    g_measuring = true;
}

// Smallest depth d with at least fraction `f` of the samples <= d.
double
Quantile(const std::vector<uint64_t>& hist, double f)
{
    uint64_t n = 0;
    for (uint64_t c : hist)
    {
        n += c;
    }
    if (n == 0)
    {
        return 0.0;
    }
    uint64_t need = static_cast<uint64_t>(std::ceil(f * static_cast<double>(n)));
    if (need == 0)
    {
        need = 1;
    }
    uint64_t acc = 0;
    for (std::size_t d = 0; d < hist.size(); d++)
    {
        acc += hist[d];
        if (acc >= need)
        {
            return static_cast<double>(d);
        }
    }
    return static_cast<double>(hist.size() - 1);
}

} // namespace

double
CpuSeconds()
{
    timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int
main(int argc, char* argv[])
{
    // Picosecond clock: at 100 Gb/s a 1502-byte frame takes 120.16 ns, which
    // the default nanosecond resolution would round.
    Time::SetResolution(Time::PS);
    std::string rate = "1Gbps";
    double rttUs = 100.0;
    uint32_t k = 20;
    uint32_t buffer = 1000;
    uint32_t senders = 2;
    double duration = 2.0;
    double warmup = 0.5;
    std::string out;
    std::string qlog;
    uint32_t segmentSize = 1448; // + 20 IP + 20 TCP + 12 timestamp option = 1500 B IP packets
    uint32_t initCwnd = 10;
    uint32_t delAckCount = 1; // ACK every segment, as p4cc's receiver does by default
    double dctcpG = 1.0 / 16;

    CommandLine cmd(__FILE__);
    cmd.Usage("DCTCP dumbbell: N senders -> switch -> receiver, every link at rate C; "
              "the switch's port to the receiver marks CE at an instantaneous queue >= K.");
    cmd.AddValue("rate", "link rate C of every link (ns-3 DataRate: 100Mbps, 1Gbps, ...)", rate);
    cmd.AddValue("rtt", "base (propagation) round-trip time, microseconds", rttUs);
    cmd.AddValue("K", "ECN marking threshold, packets waiting", k);
    cmd.AddValue("buffer", "bottleneck buffer, packets (tail drop beyond)", buffer);
    cmd.AddValue("senders", "number of DCTCP senders", senders);
    cmd.AddValue("duration", "simulated time, seconds (warm-up included)", duration);
    cmd.AddValue("warmup", "warm-up, seconds, not measured", warmup);
    cmd.AddValue("out", "also write the JSON object (+ queue histogram) to this file", out);
    cmd.AddValue("qlog", "write every queue sample (ns, packets), warm-up included, to this file",
                 qlog);
    cmd.AddValue("segmentSize", "TCP MSS, bytes", segmentSize);
    cmd.AddValue("initCwnd", "initial congestion window, segments", initCwnd);
    cmd.AddValue("delAckCount", "segments per ACK at the receiver (1 = ACK every segment)",
                 delAckCount);
    cmd.AddValue("g", "DCTCP estimation gain g", dctcpG);
    cmd.Parse(argc, argv);

    if (senders < 1 || k < 1 || buffer <= k || warmup >= duration || rttUs <= 0)
    {
        std::cerr << "need senders >= 1, K >= 1, buffer > K, warmup < duration, rtt > 0\n";
        return 2;
    }
    DataRate c(rate);
    Time linkDelay = NanoSeconds(static_cast<int64_t>(std::llround(rttUs * 1000.0 / 4.0)));

    // Socket buffers: well above what the window can ever need (BDP + the
    // whole bottleneck buffer), so neither sender nor receiver window limits.
    double bdpBytes = c.GetBitRate() * rttUs * 1e-6 / 8.0;
    uint32_t sockBuf = static_cast<uint32_t>(
        std::min(1.0e9, std::max(4.0 * 1048576.0, 4.0 * (bdpBytes + buffer * 1500.0))));

    // --- TCP: DCTCP everywhere (the receiver's echo follows DCTCP's rules) ---
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", StringValue("ns3::TcpDctcp"));
    Config::SetDefault("ns3::TcpSocketBase::UseEcn", EnumValue(TcpSocketState::On));
    Config::SetDefault("ns3::TcpDctcp::DctcpShiftG", DoubleValue(dctcpG));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segmentSize));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(initCwnd));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAckCount));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sockBuf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(sockBuf));
    GlobalValue::Bind("ChecksumEnabled", BooleanValue(false));

    // --- topology ---
    NodeContainer senderNodes;
    senderNodes.Create(senders);
    Ptr<Node> sw = CreateObject<Node>();
    Ptr<Node> receiver = CreateObject<Node>();

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", DataRateValue(c));
    p2p.SetChannelAttribute("Delay", TimeValue(linkDelay));
    // 1-packet device queue: the queueing happens in the queue discs.
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", QueueSizeValue(QueueSize("1p")));

    std::vector<NetDeviceContainer> access; // [sender, switch] per sender
    for (uint32_t i = 0; i < senders; i++)
    {
        access.push_back(p2p.Install(senderNodes.Get(i), sw));
    }
    NetDeviceContainer bottleneck = p2p.Install(sw, receiver); // [switch, receiver]

    InternetStackHelper stack;
    stack.InstallAll();

    // Queue discs before addresses (else ns-3 installs its default one).
    // Bottleneck: threshold marker. The queue disc holds the waiting packets
    // but the one in the device queue (see the header), hence K - 1.
    TrafficControlHelper red;
    red.SetRootQueueDisc("ns3::RedQueueDisc",
                         "UseEcn", BooleanValue(true),
                         "UseHardDrop", BooleanValue(false),
                         "Gentle", BooleanValue(false),
                         "QW", DoubleValue(1.0),
                         "MinTh", DoubleValue(k - 1),
                         "MaxTh", DoubleValue(k - 1),
                         "MeanPktSize", UintegerValue(1500),
                         "LinkBandwidth", DataRateValue(c),
                         "LinkDelay", TimeValue(linkDelay),
                         "MaxSize", QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, buffer - 1)));
    QueueDiscContainer redQd = red.Install(bottleneck.Get(0));
    // Everywhere else: a big FIFO that never drops or marks.
    TrafficControlHelper fifo;
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc",
                          "MaxSize", QueueSizeValue(QueueSize("100000p")));
    fifo.Install(bottleneck.Get(1));
    for (auto& a : access)
    {
        fifo.Install(a);
    }

    Ipv4AddressHelper addr;
    addr.SetBase("10.1.0.0", "255.255.255.0");
    for (auto& a : access)
    {
        addr.Assign(a);
        addr.NewNetwork();
    }
    addr.SetBase("10.2.0.0", "255.255.255.0");
    Ipv4InterfaceContainer rxIf = addr.Assign(bottleneck);
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    // --- applications: one unlimited bulk transfer per sender, all from t = 0 ---
    Time stop = Seconds(duration);
    g_rxBytes.assign(senders, 0);
    for (uint32_t i = 0; i < senders; i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory",
                              InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer sa = sink.Install(receiver);
        sa.Start(Seconds(0));
        sa.Get(0)->TraceConnectWithoutContext("Rx", MakeBoundCallback(&OnSinkRx, std::size_t(i)));

        BulkSendHelper bulk("ns3::TcpSocketFactory", InetSocketAddress(rxIf.GetAddress(1), port));
        bulk.SetAttribute("MaxBytes", UintegerValue(0));
        bulk.SetAttribute("SendSize", UintegerValue(segmentSize));
        ApplicationContainer ba = bulk.Install(senderNodes.Get(i));
        ba.Start(Seconds(0));
    }

    // --- measurement hooks ---
    g_qdisc = redQd.Get(0);
    g_devQueue = DynamicCast<PointToPointNetDevice>(bottleneck.Get(0))->GetQueue();
    g_qdisc->TraceConnectWithoutContext("Enqueue", MakeCallback(&OnEnqueue));
    g_qdisc->TraceConnectWithoutContext("Mark", MakeCallback(&OnMark));
    bottleneck.Get(0)->TraceConnectWithoutContext("PhyTxEnd", MakeCallback(&OnBottleneckTxEnd));
    if (!qlog.empty())
    {
        g_qlog.open(qlog);
    }
    Simulator::Schedule(Seconds(warmup), &StartMeasuring);
    Simulator::Stop(stop);

    auto t0 = std::chrono::steady_clock::now();
    double c0 = CpuSeconds();
    Simulator::Run();
    double cpu = CpuSeconds() - c0;
    auto t1 = std::chrono::steady_clock::now();
    double wall = std::chrono::duration<double>(t1 - t0).count();
    uint64_t events = Simulator::GetEventCount();

    double window = duration - warmup;
    double util = g_bottleneckTxBytes * 8.0 / (c.GetBitRate() * window);
    QueueDisc::Stats st = g_qdisc->GetStats();
    uint64_t drops = st.nTotalDroppedPackets;
    uint64_t samples = 0;
    double mean = 0;
    for (std::size_t d = 0; d < g_qhist.size(); d++)
    {
        samples += g_qhist[d];
        mean += static_cast<double>(d) * g_qhist[d];
    }
    if (samples)
    {
        mean /= samples;
    }

    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);

    std::ostringstream js;
    js.setf(std::ios::fixed);
    js.precision(6);
    js << "{\"simulator\": \"ns-3.37\", \"rate_bps\": " << c.GetBitRate() << ", \"rtt_us\": "
       << rttUs << ", \"k\": " << k << ", \"buffer\": " << buffer << ", \"senders\": " << senders
       << ", \"sim_s\": " << duration << ", \"warmup_s\": " << warmup << ", \"wall_s\": " << wall << ", \"cpu_s\": " << cpu
       << ", \"events\": " << events << ", \"queue_median_pkts\": " << Quantile(g_qhist, 0.5)
       << ", \"queue_p5_pkts\": " << Quantile(g_qhist, 0.05)
       << ", \"queue_p95_pkts\": " << Quantile(g_qhist, 0.95)
       << ", \"queue_p99_pkts\": " << Quantile(g_qhist, 0.99)
       << ", \"queue_mean_pkts\": " << mean << ", \"queue_samples\": " << samples
       << ", \"utilisation\": " << util << ", \"throughput_mbps\": [";
    for (uint32_t i = 0; i < senders; i++)
    {
        js << (i ? ", " : "") << g_rxBytes[i] * 8.0 / window / 1e6;
    }
    js << "], \"ce_marks\": " << g_marks << ", \"bottleneck_pkts\": " << g_bottleneckTxPkts
       << ", \"drops_total\": " << drops << ", \"maxrss_kb\": " << ru.ru_maxrss << "}";

    std::cout << js.str() << std::endl;
    if (!out.empty())
    {
        std::ofstream f(out);
        std::string s = js.str();
        s.pop_back(); // reopen the object to add the histogram
        f << s << ", \"queue_hist\": [";
        for (std::size_t d = 0; d < g_qhist.size(); d++)
        {
            f << (d ? ", " : "") << g_qhist[d];
        }
        f << "]}\n";
    }
    Simulator::Destroy();
    return 0;
}
