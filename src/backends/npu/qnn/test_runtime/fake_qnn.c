/* A stand-in for Qualcomm's libQnnHtp.so / libQnnSystem.so, built only for the QNN plugin's tests:
 * one provider that reports a core API major version the plugin does not know (FAKE_CORE_MAJOR),
 * so the plugin must refuse it and name both versions. Nothing of Qualcomm's is in it. */
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint32_t major, minor, patch;
} FakeVersion;

typedef struct {
  uint32_t backend_id;
  const char* provider_name;
  FakeVersion core, backend;
  void* table[64]; /* all NULL */
} FakeInterface;

static const FakeInterface kProvider = {6, "FAKE_HTP", {FAKE_CORE_MAJOR, 1, 0}, {5, 0, 0}, {0}};
static const FakeInterface* kList[] = {&kProvider};

__attribute__((visibility("default"))) uint64_t QnnInterface_getProviders(
    const FakeInterface*** providers, uint32_t* n) {
  *providers = kList;
  *n = 1;
  return 0;
}

__attribute__((visibility("default"))) uint64_t QnnSystemInterface_getProviders(void** providers,
                                                                                uint32_t* n) {
  *providers = NULL;
  *n = 0;
  return 0;
}
