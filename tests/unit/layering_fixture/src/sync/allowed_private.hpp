// Fixture: sync's own private header (allowed).
#pragma once
