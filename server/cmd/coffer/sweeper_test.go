package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/cofferhq/coffer/server/internal/batchsweep"
)

// TestChainsSweeper: `coffer chains sweeper` prints the creation code of a Sweeper for this
// database's gas tank and the chain's bankroll; once deployed and named in the chains file it
// says ok; a Sweeper of another bankroll, an unknown chain and a missing --chain-id are refused.
func TestChainsSweeper(t *testing.T) {
	dev := cliChain(t)
	bankroll := common.HexToAddress(testBankroll)

	out, errOut, code := coffer(t, "chains", "sweeper", "--chain-id", "1337")
	m := regexp.MustCompile(`gas tank (0x[0-9a-fA-F]{40})`).FindStringSubmatch(out)
	if code != 0 || m == nil || !strings.Contains(out, "no sweeperAddress") {
		t.Fatalf("without a sweeper: %d %q %s", code, out, errOut)
	}
	gasTank := common.HexToAddress(m[1])
	code0 := regexp.MustCompile(`\n(0x[0-9a-f]+)\n`).FindStringSubmatch(out)
	if code0 == nil || code0[1] != "0x"+common.Bytes2Hex(batchsweep.DeployData(gasTank, bankroll, common.Address{})) {
		t.Fatalf("creation code not printed: %q", out)
	}

	sweeper, err := dev.DeploySweeper(t.Context(), gasTank, bankroll, common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	useDevChain(t, dev, map[string]any{"sweepMethod": "eip7702", "sweeperAddress": sweeper.Hex()})
	out, errOut, code = coffer(t, "chains", "sweeper", "--chain-id", "1337")
	if code != 0 || !strings.Contains(out, "sweeperAddress "+sweeper.Hex()+" obeys this gas tank, pays this bankroll and sends fees to this feeAddress: ok") {
		t.Fatalf("with its sweeper: %d %q %s", code, out, errOut)
	}

	other, err := dev.DeploySweeper(t.Context(), gasTank, common.HexToAddress("0x00000000000000000000000000000000000bad03"), common.Address{})
	if err != nil {
		t.Fatal(err)
	}
	useDevChain(t, dev, map[string]any{"sweepMethod": "eip7702", "sweeperAddress": other.Hex()})
	if out, errOut, code = coffer(t, "chains", "sweeper", "--chain-id", "1337"); code != 1 || !strings.Contains(errOut, "pays") {
		t.Fatalf("a sweeper of another bankroll: %d %q %s", code, out, errOut)
	}
	// A chain that takes fees needs a Sweeper that sends them to its feeAddress.
	useDevChain(t, dev, map[string]any{"sweepMethod": "eip7702", "sweeperAddress": sweeper.Hex(),
		"feeAddress": "0x00000000000000000000000000000000000fee01"})
	if out, errOut, code = coffer(t, "chains", "sweeper", "--chain-id", "1337"); code != 1 || !strings.Contains(errOut, "sends fees to") {
		t.Fatalf("a sweeper without the chain's feeAddress: %d %q %s", code, out, errOut)
	}
	if _, errOut, code = coffer(t, "chains", "sweeper", "--chain-id", "99"); code != 1 || !strings.Contains(errOut, "not in the chains file") {
		t.Fatalf("unknown chain: %d %s", code, errOut)
	}
	if _, errOut, code = coffer(t, "chains", "sweeper"); code != 2 || !strings.Contains(errOut, "--chain-id is required") {
		t.Fatalf("no chain id: %d %s", code, errOut)
	}
}
