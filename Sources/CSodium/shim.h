// SHA-256, HMAC-SHA256 (TempURL signatures) and, for encryption at rest, AEAD on Linux, from
// Debian's libsodium-dev.
// Apple platforms use CryptoKit instead; only the OutboxCrypto module imports this.
#include <sodium.h>
