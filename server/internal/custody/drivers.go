package custody

// The KMS drivers COFFER_MASTER_KEY_URL may name (gocloud.dev/secrets URL schemes), and the
// local keeper tests use.
import (
	_ "gocloud.dev/secrets/awskms"        // awskms://
	_ "gocloud.dev/secrets/azurekeyvault" // azurekeyvault://
	_ "gocloud.dev/secrets/gcpkms"        // gcpkms://
	_ "gocloud.dev/secrets/hashivault"    // hashivault://
	_ "gocloud.dev/secrets/localsecrets"  // base64key:// (tests, single-machine set-ups)
)
