// SPDX-License-Identifier: GPL-2.0
/*
 * Generic netlink plumbing of the xdpoff CLI: resolve the xdpoff family,
 * send doit/dump requests and collect the kernel's error and extack message.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <linux/types.h>
#include <linux/netlink.h>
#include <linux/genetlink.h>

#include "xdpoff/xdpoff.h"
#include "cli.h"

/* Context of one request: the caller's reply callback and our socket. */
struct talk {
	struct xnl	*nl;
	mnl_cb_t	cb;
	void		*data;
};

static struct nlmsghdr *put_genl(struct xnl *nl, uint16_t type, uint8_t cmd,
				 uint8_t version, uint16_t flags)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(nl->buf);
	struct genlmsghdr *genl;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	nlh->nlmsg_seq = ++nl->seq;
	genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
	genl->cmd = cmd;
	genl->version = version;
	return nlh;
}

static int talk_data(const struct nlmsghdr *nlh, void *arg)
{
	struct talk *t = arg;

	return t->cb ? t->cb(nlh, t->data) : MNL_CB_OK;
}

static int extack_attr(const struct nlattr *attr, void *data)
{
	const struct nlattr **tb = data;

	if (mnl_attr_type_valid(attr, NLMSGERR_ATTR_MAX) > 0)
		tb[mnl_attr_get_type(attr)] = attr;
	return MNL_CB_OK;
}

/*
 * NLMSG_ERROR (ack or error) and NLMSG_DONE (end of dump) both start with
 * an int error and may carry extack attributes after their fixed part.
 */
static int talk_status(const struct nlmsghdr *nlh, void *arg)
{
	const struct nlattr *tb[NLMSGERR_ATTR_MAX + 1] = {};
	const struct nlmsgerr *err = mnl_nlmsg_get_payload(nlh);
	struct talk *t = arg;
	unsigned int off = sizeof(int);
	int error = 0;

	if (mnl_nlmsg_get_payload_len(nlh) >= sizeof(int))
		error = err->error;
	if (nlh->nlmsg_type == NLMSG_ERROR) {
		if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*err)) {
			errno = EBADMSG;
			return MNL_CB_ERROR;
		}
		off = sizeof(*err);
		if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
			off += err->msg.nlmsg_len - sizeof(struct nlmsghdr);
	}
	if (nlh->nlmsg_flags & NLM_F_ACK_TLVS) {
		mnl_attr_parse(nlh, off, extack_attr, tb);
		if (tb[NLMSGERR_ATTR_MSG])
			snprintf(t->nl->extack, sizeof(t->nl->extack), "%.*s",
				 (int)mnl_attr_get_payload_len(tb[NLMSGERR_ATTR_MSG]),
				 mnl_attr_get_str(tb[NLMSGERR_ATTR_MSG]));
	}
	if (error < 0) {
		errno = -error;
		return MNL_CB_ERROR;
	}
	if (t->nl->extack[0])
		pr_warn("kernel: %s\n", t->nl->extack);
	return MNL_CB_STOP;
}

/* Send @nlh and process replies until the ack, the end of the dump or an error. */
static int xnl_talk(struct xnl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	static mnl_cb_t ctl[NLMSG_MIN_TYPE] = {
		[NLMSG_ERROR]	= talk_status,
		[NLMSG_DONE]	= talk_status,
	};
	struct talk t = { .nl = nl, .cb = cb, .data = data };
	char buf[32768] __attribute__((aligned(4)));
	ssize_t n;
	int ret;

	nl->extack[0] = '\0';
	if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
		return -errno;
	do {
		n = mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
		if (n < 0)
			return -errno;
		ret = mnl_cb_run2(buf, n, nlh->nlmsg_seq, nl->portid, talk_data,
				  &t, ctl, MNL_ARRAY_SIZE(ctl));
	} while (ret > MNL_CB_STOP);
	return ret < 0 ? -errno : 0;
}

static int family_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct nlattr *attr;

	mnl_attr_for_each(attr, nlh, sizeof(struct genlmsghdr)) {
		if (mnl_attr_get_type(attr) == CTRL_ATTR_FAMILY_ID &&
		    mnl_attr_validate(attr, MNL_TYPE_U16) == 0)
			*(uint16_t *)data = mnl_attr_get_u16(attr);
	}
	return MNL_CB_OK;
}

int xnl_open(struct xnl *nl)
{
	struct nlmsghdr *nlh;
	int one = 1, err;

	nl->family = 0;
	nl->seq = time(NULL);
	nl->sock = mnl_socket_open(NETLINK_GENERIC);
	if (!nl->sock)
		return -errno;
	/* Best effort: without them we only lose the kernel's message. */
	mnl_socket_setsockopt(nl->sock, NETLINK_EXT_ACK, &one, sizeof(one));
	mnl_socket_setsockopt(nl->sock, NETLINK_CAP_ACK, &one, sizeof(one));
	if (mnl_socket_bind(nl->sock, 0, MNL_SOCKET_AUTOPID) < 0) {
		err = -errno;
		goto fail;
	}
	nl->portid = mnl_socket_get_portid(nl->sock);

	nlh = put_genl(nl, GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_ACK);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, XDPOFF_GENL_NAME);
	err = xnl_talk(nl, nlh, family_cb, &nl->family);
	if (!err && !nl->family)
		err = -ENOENT;
	if (err)
		goto fail;
	pr_debug("generic netlink family %s has id %u\n", XDPOFF_GENL_NAME,
		 nl->family);
	return 0;
fail:
	xnl_close(nl);
	return err;
}

void xnl_close(struct xnl *nl)
{
	if (nl->sock)
		mnl_socket_close(nl->sock);
	nl->sock = NULL;
}

struct nlmsghdr *xnl_request(struct xnl *nl, uint8_t cmd, uint16_t flags)
{
	return put_genl(nl, nl->family, cmd, XDPOFF_GENL_VERSION, flags);
}

int xnl_doit(struct xnl *nl, struct nlmsghdr *nlh)
{
	nlh->nlmsg_flags |= NLM_F_ACK;
	return xnl_talk(nl, nlh, NULL, NULL);
}

int xnl_dump(struct xnl *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	nlh->nlmsg_flags |= NLM_F_DUMP;
	return xnl_talk(nl, nlh, cb, data);
}
