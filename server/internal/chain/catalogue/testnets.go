package catalogue

// Sources:
//
//   - USDC: Circle's testnet USDC, "USDC contract addresses" (Testnet),
//     https://developers.circle.com/stablecoins/usdc-contract-addresses; Circle's faucet
//     (https://faucet.circle.com) hands it out. Circle issues no USDC on BSC testnet.
//   - USDT: Tether issues no USDT on any of these testnets. The test tokens that call
//     themselves USDT there are anyone's deployments, so no testnet preset lists USDT.
//   - Price feeds: Chainlink, "Price Feed Contract Addresses", the testnet of each network
//     (https://docs.chain.link/data-feeds/price-feeds/addresses?network=<…>&page=1, "Sepolia
//     Testnet", "Base Sepolia", "Arbitrum Sepolia", "OP Sepolia", "Polygon Amoy", "BNB Chain
//     Testnet"). Where a USDC / USD feed could not be confirmed (OP Sepolia), none is listed:
//     USDC is then priced from COFFER_STATIC_PRICES.
//   - Finality and RPC as for the mainnets (mainnets.go): Sepolia, OP Stack and Arbitrum
//     testnets, Amoy and BSC testnet all serve the "finalized" tag.

func testnets() []Preset {
	return []Preset{
		{
			Name: "sepolia", Title: "Sepolia", ChainID: 11155111, Mainnet: "ethereum",
			RPC:       "https://ethereum-sepolia-rpc.publicnode.com",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDC", Address: "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x694AA1769357215DE4FAC081bf1f309aDC325306", // ETH / USD
				"USDC": "0xA2F78ab2355fe2f984D808B5CeE7FD0A93D5270E", // USDC / USD
			},
		},
		{
			Name: "base-sepolia", Title: "Base Sepolia", ChainID: 84532, Mainnet: "base",
			RPC:       "https://sepolia.base.org",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDC", Address: "0x036CbD53842c5426634e7929541eC2318f3dCF7e", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x4aDC67696bA383F43DD60A9e78F2C97Fbbfc7cb1", // ETH / USD
				"USDC": "0xd30e2101a97dcbAeBCBC04F14C3f624E67A35165", // USDC / USD
			},
		},
		{
			Name: "arbitrum-sepolia", Title: "Arbitrum Sepolia", ChainID: 421614, Mainnet: "arbitrum",
			RPC:       "https://sepolia-rollup.arbitrum.io/rpc",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDC", Address: "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d", Decimals: 6},
			},
			Feeds: map[string]string{
				// The same address as Base Sepolia's USDC / USD: the two were deployed by
				// one account at one nonce on different chains.
				"ETH":  "0xd30e2101a97dcbAeBCBC04F14C3f624E67A35165", // ETH / USD
				"USDC": "0x0153002d20B96532C639313c2d54c3dA09109309", // USDC / USD
			},
		},
		{
			Name: "optimism-sepolia", Title: "OP Sepolia", ChainID: 11155420, Mainnet: "optimism",
			RPC:       "https://sepolia.optimism.io",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDC", Address: "0x5fd84259d66Cd46123540766Be93DFE6D43130D7", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH": "0x61Ec26aA57019C486B10502285c5A3D4A4750AD7", // ETH / USD
			},
		},
		{
			Name: "polygon-amoy", Title: "Polygon Amoy", ChainID: 80002, Mainnet: "polygon",
			RPC:       "https://rpc-amoy.polygon.technology",
			Finalized: true, NativeSymbol: "POL", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDC", Address: "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", Decimals: 6},
			},
			Feeds: map[string]string{
				"POL":  "0x001382149eBa3441043c1c66972b4772963f5D43", // POL / USD (formerly MATIC / USD)
				"USDC": "0x1b8739bB4CdF0089d07097A9Ae5Bd274b29C6F16", // USDC / USD
			},
		},
		{
			// No token: neither Circle nor Tether issues on BSC testnet (see above).
			Name: "bsc-testnet", Title: "BNB Smart Chain Testnet", ChainID: 97, Mainnet: "bsc",
			RPC:       "https://bsc-testnet-dataseed.bnbchain.org",
			Finalized: true, NativeSymbol: "BNB", NativeDecimals: 18,
			Feeds: map[string]string{
				"BNB": "0x2514895c72f50D8bd4B4F9b1110F0D6bD2c97526", // BNB / USD
			},
		},
	}
}
