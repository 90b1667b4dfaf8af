// Fixture: a public cuda header (allowed target).
#pragma once
