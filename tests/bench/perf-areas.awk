# SPDX-License-Identifier: GPL-2.0
#
# tests/bench/perf-areas.awk: where the receiving vCPU's time goes, by
# area, for each mode of the virtio path (tests/bench/guest.sh).
#
# Input: `perf script -F time,ip,sym` of one perf record of vCPU 0 that was
# enabled only during each mode's perf window; -v windows=FILE, lines
# "MODE START END" (CLOCK_MONOTONIC seconds, as perf record -k mono);
# -v sec=SEC names the output's section (default perf); -v tag=K=V adds
# K=V to its lines.
# Output per mode: one "@bench sec=SEC mode=M samples=N AREA=PCT ..."
# line (percent of the window's samples, idle included) and "# " lines
# with the ten hottest symbols.  Areas:
#
#   idle     the vCPU had nothing to do
#   hash     BPF hash map lookups: the kernel's htab code, jhash and
#            memcmp, which the XDP program's lookups of the rules and
#            flows maps run (in ft-sw, nft-* and route, jhash and memcmp
#            are also the software flowtable's, conntrack's and nf_tables')
#   xdp      the XDP program, the other BPF helpers and maps it calls
#   driver   virtio-net and virtio ring: receive, refill, notify
#   zero     clear_page / memset: mostly init_on_alloc (Debian's kernel
#            zeroes every page and slab object it hands out; `rep stos`
#            is slow under TCG)
#   mem      page and slab allocation and freeing (without the zeroing)
#   skb      building and freeing socket buffers
#   stack    the receive path above the driver (GRO, netif_receive, IP)
#   nft      nf_tables and the netfilter hooks
#   tc       tc ingress, flower, gact
#   other    everything else (irq entry/exit, softirq, timers, RCU, ...)
function area(s) {
	if (s ~ /^(clear_page|memset|__memset)/)
		return "zero"
	if (s ~ /^(default_idle|cpu_idle|do_idle|native_safe_halt|pv_native_safe_halt|arch_cpu_idle|acpi_idle|poll_idle|cpuidle|mwait_idle|intel_idle|default_idle_call)/)
		return "idle"
	if (s ~ /^(htab_|__htab|lookup_nulls_elem|lookup_elem_raw|jhash|memcmp|__memcmp)/)
		return "hash"
	if (s ~ /^(\[bpf-jit\]|bpf_prog_|bpf_dispatcher|array_map|percpu_array|bpf_map_|__bpf_prog|bpf_xdp|xdp_|do_xdp_generic|netif_receive_generic_xdp|bpf_net_ctx)/)
		return "xdp"
	if (s ~ /^(virtnet_|virtqueue_|vring_|virtio|vp_|detach_buf|receive_buf|receive_small|receive_mergeable|add_recvbuf|try_fill_recv|page_to_skb|free_old_xmit|skb_recv_done|vm_notify|vp_notify|iowrite16|ioread)/)
		return "driver"
	if (s ~ /^(__alloc_pages|alloc_pages|get_page_from_freelist|free_unref_page|__free_pages|free_pcp|__page_frag|page_frag_|rmqueue|__rmqueue|kmem_cache_|__kmem_cache|kmalloc|__kmalloc|kfree|___slab|__slab|slab_|memcg_|page_pool|put_page|__put_page|__folio_put|mod_objcg|obj_cgroup|refill_obj|__mod_memcg|__memcg)/)
		return "mem"
	if (s ~ /^(build_skb|napi_build_skb|__build_skb|__alloc_skb|__napi_alloc_skb|napi_alloc_skb|__netdev_alloc_skb|kfree_skb|__kfree_skb|skb_release|skb_free|consume_skb|napi_consume_skb|skb_put|skb_push|skb_pull|__skb|skb_|napi_skb_cache|kfree_skbmem|sk_skb_reason_drop)/)
		return "skb"
	if (s ~ /^(nft_|nf_|__nft|nft|nf_hook|nf_ingress|expr_call_ops_eval)/)
		return "nft"
	if (s ~ /^(tcf_|__tcf|fl_|tc_|sch_handle_ingress|mini_qdisc|gact_|tcf_gact|fl_classify)/)
		return "tc"
	if (s ~ /^(__netif_receive|netif_receive|__napi_poll|napi_|net_rx_action|gro_|dev_gro|napi_gro|inet_gro|udp_gro|udp4_gro|ip_rcv|ip_route|ip_list_rcv|ip_sublist|fib_|eth_type_trans|__netif|netif_|process_backlog|ip_|udp_|__udp|inet_|dev_|rps_|__dev_)/)
		return "stack"
	return "other"
}
BEGIN {
	while ((getline line < windows) > 0) {
		split(line, w, " ")
		nw++
		wmode[nw] = w[1]; wstart[nw] = w[2] - 0.5; wend[nw] = w[3] + 0.5
	}
}
NF >= 3 {
	t = $1; sub(/:$/, "", t); t += 0
	sym = $NF
	# JITed BPF code of a program unloaded before perf script runs (each
	# mode unloads its own): no symbol, an address in the module area,
	# where every module symbol resolves.
	if (sym == "[unknown]" && $2 ~ /^ffffffff[a-f]/)
		sym = "[bpf-jit]"
	for (i = 1; i <= nw; i++)
		if (t >= wstart[i] && t <= wend[i])
			break
	if (i > nw)
		next
	m = wmode[i]
	a = area(sym)
	n[m]++
	cnt[m, a]++
	if (a != "idle")
		hot[m, sym]++
	if (!(m in seen)) {
		seen[m] = 1
		order[++nm] = m
	}
}
END {
	na = split("idle hash xdp driver zero mem skb stack nft tc other", names, " ")
	for (k = 1; k <= nm; k++) {
		m = order[k]
		line = ""
		for (i = 1; i <= na; i++)
			line = line sprintf(" %s=%.2f", names[i], 100 * cnt[m, names[i]] / n[m])
		print "@bench sec=" (sec ? sec : "perf") " mode=" m (tag ? " " tag : "") " samples=" n[m] line
		print "# perf " m ", " n[m] " samples of vCPU 0 by area (%):" line
		# ten hottest symbols, idle left out
		for (j = 1; j <= 10; j++) {
			best = ""; bc = 0
			for (key in hot) {
				split(key, kk, SUBSEP)
				if (kk[1] == m && hot[key] > bc) {
					bc = hot[key]; best = key
				}
			}
			if (!bc)
				break
			split(best, kk, SUBSEP)
			printf "#   %6.2f%%  %-6s %s\n", 100 * bc / n[m], area(kk[2]), kk[2]
			delete hot[best]
		}
	}
}
