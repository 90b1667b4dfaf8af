// membridge/ipc/channel.hpp: the ipc transport of this platform, with one set of names
// (ipc::channel, ipc::listener, ipc::listen_options, ipc::peer_credentials): a Unix domain socket
// on Linux (socket_channel.hpp), a named pipe on Windows (pipe_channel.hpp). Both carry the same
// framed messages (ipc/wire.hpp), checked by the same validator; docs/protocol.md describes both.
#pragma once

#include <membridge/ipc/pipe_channel.hpp>
#include <membridge/ipc/socket_channel.hpp>
