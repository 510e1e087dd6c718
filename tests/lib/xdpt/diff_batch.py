# SPDX-License-Identifier: GPL-2.0
"""Running a batch: load, send, read back, compare.

Part of tests/lib/difftest.py, the differential test."""
import errno
import json
import subprocess
import time

from xdpt.diff_pools import mac_str
from xdpt.diff_rules import Chain, render_table
from xdpt.diff_sys import Ethtool, Nft, packet_socket, read_text, rx_packets


class Setup:
    def __init__(self, args):
        self.hw, self.sw = args.hw, args.sw
        tx_hw, _, ns_hw = args.hw_tx.partition("@")
        tx_sw, _, ns_sw = args.sw_tx.partition("@")
        self.s_hw = packet_socket(tx_hw, ns_hw or None)
        self.s_sw = packet_socket(tx_sw, ns_sw or None)
        self.nft = Nft()
        self.nft_json = Nft(json_out=True)
        # Generic XDP: no driver counts its drops.
        self.ethtool = None if args.no_xdp_counter else Ethtool(self.hw)
        self.last_error_path = \
            "/sys/kernel/debug/xdpoff/%s/last_error" % self.hw
        self.tc_rules = []
        self.tc_sw_rules = None     # canary only: SW's differ
        self.tc_loaded = False
        if args.tc:
            for dev in (self.hw, self.sw):
                subprocess.run(["tc", "qdisc", "del", "dev", dev, "ingress"],
                               stderr=subprocess.DEVNULL)
                subprocess.run(["tc", "qdisc", "add", "dev", dev, "ingress"],
                               check=True)


def tc_load(st, rules, sw_rules=None):
    """The filters of one ruleset on both devices (tc -batch)."""
    cmds = []
    for dev, rs in ((st.hw, rules), (st.sw, sw_rules or rules)):
        cmds.append("filter del dev %s ingress" % dev)
        for i, r in enumerate(rs):
            cmds.append("filter add dev %s ingress prio %d %s" %
                        (dev, i + 1, r.flower(dev)))
    p = subprocess.run(["tc", "-force", "-batch", "-"], input="\n".join(cmds)
                       + "\n", capture_output=True, text=True)
    return p.returncode == 0, p.stderr


def tc_counters(st, rules):
    """{(table, comment): (packets, bytes)} of the filters, HW and SW."""
    out = {}
    for table, dev in (("xdt_hw", st.hw), ("xdt_sw", st.sw)):
        p = subprocess.run(["tc", "-s", "-j", "filter", "show", "dev", dev,
                            "ingress"], capture_output=True, text=True,
                           check=True)
        for f in json.loads(p.stdout or "[]"):
            o = f.get("options")
            if not o or not 1 <= f.get("pref", 0) <= len(rules):
                continue
            stats = o["actions"][0]["stats"]
            out[(table, rules[f["pref"] - 1].comment)] = (
                stats["packets"], stats["bytes"])
            if table == "xdt_hw" and not o.get("in_hw"):
                out[("not_in_hw", rules[f["pref"] - 1].comment)] = 1
    return out


class Result:
    pass


def load(st, hw_chains, sw_chains):
    text = "flush ruleset\n" + \
        render_table("xdt_hw", st.hw, hw_chains, True, False) + \
        render_table("xdt_sw", st.sw, sw_chains, False, True)
    rc, _, err = st.nft.run(text)
    if rc == 0 and st.tc_rules is not None and (st.tc_rules or
                                                 st.tc_loaded):
        ok, tc_err = tc_load(st, st.tc_rules, st.tc_sw_rules)
        st.tc_loaded = bool(st.tc_rules)
        if not ok:
            return False, "tc: " + tc_err, text
    return rc == 0, err, text


def classify_refusal(st, text, chains):
    """Who refused: nf_tables (a dry run fails too) or the driver."""
    rc, _, err2 = st.nft.run(text, dry_run=True)
    if rc == 0:
        return "driver: " + (read_text(st.last_error_path) or "(no reason)"), \
            "(refused at commit)"
    lines = err2.splitlines()
    why = next((l for l in lines if l.startswith("Error")), err2.strip()[:80])
    for c in chains:
        for r in c.rules:
            probe = render_table("xdt_probe", st.hw, [Chain("p", 1, [r])],
                                 True, False, bare=True)
            if st.nft.run(probe, dry_run=True)[0]:
                return "nf_tables: " + why, r.render(st.hw)
    return "nf_tables: " + why, "(no single rule)"


def send(st, frames):
    for data in frames:
        for s in (st.s_hw, st.s_sw):
            while True:
                try:
                    s.send(data)
                    break
                except OSError as e:
                    if e.errno != errno.ENOBUFS:    # the queue is full
                        raise
                    time.sleep(0.002)


def wait_rx(st, rx0, n, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        got = (rx_packets(st.hw) - rx0[0], rx_packets(st.sw) - rx0[1])
        if got[0] >= n and got[1] >= n:
            return got
        if time.monotonic() > deadline:
            return got
        time.sleep(0.005)


def read_state(st):
    rc, out, err = st.nft_json.run("list ruleset")
    if rc:
        raise RuntimeError("nft list ruleset: " + err)
    state = {"sets": {}, "counters": {}}
    for item in json.loads(out)["nftables"]:
        if "set" in item:
            s = item["set"]
            elems = s.get("elem", [])
            state["sets"][(s["table"], s["name"])] = {
                e if isinstance(e, str) else e.get("elem", {}).get("val", "")
                for e in elems}
        elif "rule" in item:
            r = item["rule"]
            if not r.get("comment"):
                continue
            for e in r["expr"]:
                if "counter" in e:
                    state["counters"][(r["table"], r["comment"])] = (
                        e["counter"]["packets"], e["counter"]["bytes"])
    if st.tc_rules:
        state["counters"].update(tc_counters(st, st.tc_rules))
        state["tc_rules"] = st.tc_rules
    return state


def outcome(state, table, m):
    sets = state["sets"]
    if m in sets.get((table, "survived"), ()):
        return "pass"
    if m in sets.get((table, "arrived"), ()):
        return "drop"
    return "xdp" if table == "xdt_hw" else "gone"


def sw_path(state, chains, m):
    """What each SW chain did with the frame (in priority order): no rule
    matched, or one did (or an earlier chain dropped the frame)."""
    sets = state["sets"]
    return ["%s:%s" % (c.name, "no match" if m in sets.get(
        ("xdt_sw", "fall_" + c.name), ()) else "hit")
        for c in sorted(chains, key=lambda c: c.prio)]


def compare(state, frames, chains, base=None):
    """Per-frame decisions and per-rule counters, HW against SW."""
    res = Result()
    res.decisions = []      # (frame index, hw outcome, sw outcome)
    res.counters = []       # (comment, hw (pkts, bytes), sw (pkts, bytes))
    res.outcomes = []
    for i, f in enumerate(frames):
        m = mac_str(f.smac)
        hw, sw = outcome(state, "xdt_hw", m), outcome(state, "xdt_sw", m)
        res.outcomes.append((hw, sw))
        if (hw == "pass") != (sw == "pass"):
            res.decisions.append((i, hw, sw))
    tc = state.get("tc_rules", [])
    for c in chains + ([Chain("tc", 0, tc)] if tc else []):
        for r in c.rules:
            hw = state["counters"].get(("xdt_hw", r.comment), (None, None))
            sw = state["counters"].get(("xdt_sw", r.comment), (None, None))
            if base:
                hw = tuple(a - b for a, b in zip(hw, base["counters"].get(
                    ("xdt_hw", r.comment))))
                sw = tuple(a - b for a, b in zip(sw, base["counters"].get(
                    ("xdt_sw", r.comment))))
            if hw != sw:
                res.counters.append((r.comment, hw, sw))
    return res


class Timer:
    """Seconds spent per phase, for the report."""

    def __init__(self):
        self.t = {}

    def add(self, what, since):
        now = time.monotonic()
        self.t[what] = self.t.get(what, 0.0) + now - since
        return now


def run_batch(st, hw_chains, sw_chains, frames, timer=None):
    """Load, send, read back, compare.  None if nft refused the ruleset."""
    timer = timer or Timer()
    t = time.monotonic()
    ok, err, text = load(st, hw_chains, sw_chains)
    t = timer.add("load", t)
    if not ok:
        return None, err, text
    datas = [f.build() for f in frames]
    rx0 = (rx_packets(st.hw), rx_packets(st.sw))
    drops0 = st.ethtool.sum("_xdp_drops") if st.ethtool else 0
    send(st, datas)
    got = wait_rx(st, rx0, len(datas))
    time.sleep(0.02)
    t = timer.add("send", t)
    state = read_state(st)
    res = compare(state, frames, sw_chains)
    if res.decisions or res.counters:
        # Frames still on their way through the chains?  Look again.
        time.sleep(0.3)
        state = read_state(st)
        res = compare(state, frames, sw_chains)
    timer.add("read", t)
    res.state = state
    res.rx = got
    res.xdp_drops = (st.ethtool.sum("_xdp_drops") - drops0
                     if st.ethtool else 0)
    return res, None, None
