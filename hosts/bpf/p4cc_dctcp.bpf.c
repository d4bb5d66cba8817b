// SPDX-License-Identifier: GPL-2.0
/*
 * p4cc_dctcp: DCTCP (Alizadeh et al., SIGCOMM 2010; RFC 8257) as a BPF
 * struct_ops TCP congestion control, for kernels built without the dctcp
 * module. Registered as "p4cc_dctcp" (see hosts/bpf/Makefile and
 * `p4cc-host bpf-dctcp load`).
 *
 * Sender side: alpha <- (1-g)*alpha + g*F once per window of data, where F is
 * the fraction of delivered packets that were CE-marked (tp->delivered_ce);
 * on congestion cwnd <- cwnd * (1 - alpha/2). Window growth is Reno's.
 * Receiver side: ECE reflects the CE state of the data exactly (an immediate
 * ACK is forced on every CE state change), as the DCTCP paper prescribes.
 * If ECN was not negotiated the connection falls back to Reno behaviour.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char _license[] SEC("license") = "GPL";

/* #defines that BTF does not carry */
#define TCP_ECN_OK          1
#define TCP_ECN_DEMAND_CWR  4
#define TCP_CONG_NEEDS_ECN  0x2
#define DCTCP_MAX_ALPHA     1024U

#define min(a, b) ((a) < (b) ? (a) : (b))
#define max(a, b) ((a) > (b) ? (a) : (b))

/* Parameters (same defaults as the kernel module). */
const volatile __u32 dctcp_shift_g = 4;            /* g = 1/16 */
const volatile __u32 dctcp_alpha_on_init = DCTCP_MAX_ALPHA;

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;

struct p4cc_dctcp {
	__u32 old_delivered;
	__u32 old_delivered_ce;
	__u32 prior_rcv_nxt;
	__u32 dctcp_alpha;
	__u32 next_seq;
	__u32 ce_state;
	__u32 loss_cwnd;
	__u32 reno_fallback;
};

static __always_inline struct tcp_sock *tcp_sk_of(struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct p4cc_dctcp *ca_of(struct sock *sk)
{
	return (struct p4cc_dctcp *)((struct inet_connection_sock *)sk)->icsk_ca_priv;
}

static __always_inline int before(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq1 - seq2) < 0;
}

static __always_inline void dctcp_reset(const struct tcp_sock *tp, struct p4cc_dctcp *ca)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(p4cc_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	struct p4cc_dctcp *ca = ca_of(sk);

	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->dctcp_alpha = min(dctcp_alpha_on_init, DCTCP_MAX_ALPHA);
	ca->loss_cwnd = 0;
	ca->ce_state = 0;
	ca->reno_fallback = 0;
	if (!(tp->ecn_flags & TCP_ECN_OK) &&
	    sk->__sk_common.skc_state != TCP_LISTEN &&
	    sk->__sk_common.skc_state != TCP_CLOSE)
		ca->reno_fallback = 1;
	dctcp_reset(tp, ca);
}

SEC("struct_ops")
__u32 BPF_PROG(p4cc_dctcp_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	struct p4cc_dctcp *ca = ca_of(sk);
	__u32 cwnd = tp->snd_cwnd;

	ca->loss_cwnd = cwnd;
	if (ca->reno_fallback)
		return max(cwnd >> 1U, 2U);
	return max(cwnd - ((cwnd * ca->dctcp_alpha) >> 11U), 2U);
}

/* Once per window of data: alpha = (1 - g) * alpha + g * F. */
SEC("struct_ops")
void BPF_PROG(p4cc_dctcp_update_alpha, struct sock *sk, __u32 flags)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	struct p4cc_dctcp *ca = ca_of(sk);

	if (!before(tp->snd_una, ca->next_seq)) {
		__u32 delivered = tp->delivered - ca->old_delivered;
		__u32 delivered_ce = tp->delivered_ce - ca->old_delivered_ce;
		__u32 alpha = ca->dctcp_alpha;
		__u32 dec = alpha >> dctcp_shift_g;

		/* alpha -= min_not_zero(alpha, alpha >> g) */
		if (dec == 0)
			dec = alpha;
		alpha -= min(alpha, dec);
		if (delivered_ce) {
			delivered_ce <<= (10 - dctcp_shift_g);
			delivered_ce /= max(1U, delivered);
			alpha = min(alpha + delivered_ce, DCTCP_MAX_ALPHA);
		}
		ca->dctcp_alpha = alpha;
		dctcp_reset(tp, ca);
	}
}

static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk_of(sk);
	struct p4cc_dctcp *ca = ca_of(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = max(tp->snd_cwnd >> 1U, 2U);
}

SEC("struct_ops")
void BPF_PROG(p4cc_dctcp_state, struct sock *sk, __u8 new_state)
{
	if (new_state == TCP_CA_Recovery &&
	    new_state != ((struct inet_connection_sock *)sk)->icsk_ca_state)
		dctcp_react_to_loss(sk);
	/* TCP_CA_Loss is handled by ssthresh() */
}

static __always_inline void dctcp_ece_ack_cwr(struct sock *sk, __u32 ce_state)
{
	struct tcp_sock *tp = tcp_sk_of(sk);

	if (ce_state == 1)
		tp->ecn_flags |= TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~TCP_ECN_DEMAND_CWR;
}

/* Receiver: ECE mirrors the CE state of the data; a state change forces an
 * immediate ACK (and first flushes a delayed ACK carrying the old state). */
static __always_inline void dctcp_ece_ack_update(struct sock *sk, enum tcp_ca_event evt,
						 struct p4cc_dctcp *ca)
{
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;
	__u32 new_ce_state = (evt == CA_EVENT_ECN_IS_CE) ? 1 : 0;

	if (ca->ce_state != new_ce_state) {
		if (icsk->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_ece_ack_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(sk, ca->prior_rcv_nxt);
		}
		icsk->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tcp_sk_of(sk)->rcv_nxt;
	ca->ce_state = new_ce_state;
	dctcp_ece_ack_cwr(sk, new_ce_state);
}

SEC("struct_ops")
void BPF_PROG(p4cc_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct p4cc_dctcp *ca = ca_of(sk);

	switch (ev) {
	case CA_EVENT_ECN_IS_CE:
	case CA_EVENT_ECN_NO_CE:
		dctcp_ece_ack_update(sk, ev, ca);
		break;
	case CA_EVENT_LOSS:
		dctcp_react_to_loss(sk);
		break;
	default:
		break;
	}
}

SEC("struct_ops")
__u32 BPF_PROG(p4cc_dctcp_cwnd_undo, struct sock *sk)
{
	const struct p4cc_dctcp *ca = ca_of(sk);
	struct tcp_sock *tp = tcp_sk_of(sk);

	return max(tp->snd_cwnd, ca->loss_cwnd);
}

SEC("struct_ops")
void BPF_PROG(p4cc_dctcp_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	tcp_reno_cong_avoid(sk, ack, acked);
}

SEC(".struct_ops")
struct tcp_congestion_ops p4cc_dctcp = {
	.init         = (void *)p4cc_dctcp_init,
	.in_ack_event = (void *)p4cc_dctcp_update_alpha,
	.cwnd_event   = (void *)p4cc_dctcp_cwnd_event,
	.ssthresh     = (void *)p4cc_dctcp_ssthresh,
	.cong_avoid   = (void *)p4cc_dctcp_cong_avoid,
	.undo_cwnd    = (void *)p4cc_dctcp_cwnd_undo,
	.set_state    = (void *)p4cc_dctcp_state,
	.flags        = TCP_CONG_NEEDS_ECN,
	.name         = "p4cc_dctcp",
};
