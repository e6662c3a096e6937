package catalogue

// Sources of the addresses below (checked against each other and against public repositories
// that list the same contracts):
//
//   - USDC: Circle, "USDC contract addresses",
//     https://developers.circle.com/stablecoins/usdc-contract-addresses (native USDC only,
//     never the bridged USDC.e / USDbC).
//   - USDT: Tether, "Supported protocols", https://tether.to/en/supported-protocols, and the
//     chains' explorers (etherscan.io, arbiscan.io, optimistic.etherscan.io, polygonscan.com,
//     bscscan.com token pages, "Tether USD"). Base has no Tether-issued USDT: its USDT is the
//     bridged token that Base's explorer lists as "Tether USD" (basescan.org).
//   - Price feeds: Chainlink, "Price Feed Contract Addresses",
//     https://docs.chain.link/data-feeds/price-feeds/addresses?network=<ethereum|base|arbitrum|optimism|polygon|bnb-chain>
//     (the proxy addresses, 8 decimals).
//   - Finality: Ethereum's finalized checkpoint; OP Stack (Base, OP Mainnet) and Arbitrum
//     Nitro answer the "finalized" tag with the L2 blocks whose batches are in a finalized L1
//     block; Polygon PoS with its milestones (PIP-11, "Deterministic finality via
//     Milestones"); BNB Smart Chain with fast finality (BEP-126). Each preset therefore waits
//     for the finalized block rather than a depth.
//   - RPC: the chains' own public endpoints (docs.base.org, docs.arbitrum.io,
//     docs.optimism.io, docs.polygon.technology; docs.bnbchain.org for BSC testnet), and
//     PublicNode (publicnode.com) for Ethereum and Sepolia, which publish none, and for BNB
//     Smart Chain, whose own public endpoints refuse eth_getLogs (docs.bnbchain.org,
//     "JSON-RPC endpoint"). They are rate-limited: for trying out only.

func mainnets() []Preset {
	return []Preset{
		{
			Name: "ethereum", Title: "Ethereum", ChainID: 1,
			RPC:       "https://ethereum-rpc.publicnode.com",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDT", Address: "0xdAC17F958D2ee523a2206206994597C13D831ec7", Decimals: 6},
				{Symbol: "USDC", Address: "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x5f4eC3Df9cbd43714FE2740f5E3616155c5b8419", // ETH / USD
				"USDT": "0x3E7d1eAB13ad0104d2750B8863b489D65364e32D", // USDT / USD
				"USDC": "0x8fFfFfd4AfB6115b954Bd326cbe7B4BA576818f6", // USDC / USD
			},
		},
		{
			Name: "base", Title: "Base", ChainID: 8453,
			RPC:       "https://mainnet.base.org",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				// Bridged Tether USD (see above).
				{Symbol: "USDT", Address: "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2", Decimals: 6},
				{Symbol: "USDC", Address: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x71041dddad3595F9CEd3DcCFBe3D1F4b0a16Bb70", // ETH / USD
				"USDT": "0xf19d560eB8d2ADf07BD6D13ed03e1D11215721F9", // USDT / USD
				"USDC": "0x7e860098F58bBFC8648a4311b374B1D669a2bc6B", // USDC / USD
			},
		},
		{
			Name: "arbitrum", Title: "Arbitrum One", ChainID: 42161,
			RPC:       "https://arb1.arbitrum.io/rpc",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDT", Address: "0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9", Decimals: 6},
				{Symbol: "USDC", Address: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x639Fe6ab55C921f74e7fac1ee960C0B6293ba612", // ETH / USD
				"USDT": "0x3f3f5dF88dC9F13eac63DF89EC16ef6e7E25DdE7", // USDT / USD
				"USDC": "0x50834F3163758fcC1Df9973b6e91f0F0F0434aD3", // USDC / USD
			},
		},
		{
			Name: "optimism", Title: "OP Mainnet", ChainID: 10,
			RPC:       "https://mainnet.optimism.io",
			Finalized: true, NativeSymbol: "ETH", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDT", Address: "0x94b008aA00579c1307B0EF2c499aD98a8ce58e58", Decimals: 6},
				{Symbol: "USDC", Address: "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85", Decimals: 6},
			},
			Feeds: map[string]string{
				"ETH":  "0x13e3Ee699D1909E989722E753853AE30b17e08c5", // ETH / USD
				"USDT": "0xECef79E109e997bCA29c1c0897ec9d7b03647F5E", // USDT / USD
				"USDC": "0x16a9FA2FDa030272Ce99B29CF780dFA30361E0f3", // USDC / USD
			},
		},
		{
			// The native asset is POL (formerly MATIC); Chainlink's "POL / USD" feed is the
			// former MATIC / USD proxy.
			Name: "polygon", Title: "Polygon PoS", ChainID: 137,
			RPC:       "https://polygon-rpc.com",
			Finalized: true, NativeSymbol: "POL", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDT", Address: "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", Decimals: 6},
				{Symbol: "USDC", Address: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", Decimals: 6},
			},
			Feeds: map[string]string{
				"POL":  "0xAB594600376Ec9fD91F8e885dADF0CE036862dE0", // POL / USD
				"USDT": "0x0A6513e40db6EB1b165753AD52E80663aeA50545", // USDT / USD
				"USDC": "0xfE4A8cc5b5B2366C1B58Bea3858e81843581b2F7", // USDC / USD
			},
		},
		{
			// Binance-Peg USDT and USDC have 18 decimals on BNB Smart Chain, not 6.
			Name: "bsc", Title: "BNB Smart Chain", ChainID: 56,
			RPC:       "https://bsc-rpc.publicnode.com",
			Finalized: true, NativeSymbol: "BNB", NativeDecimals: 18,
			Tokens: []Token{
				{Symbol: "USDT", Address: "0x55d398326f99059fF775485246999027B3197955", Decimals: 18},
				{Symbol: "USDC", Address: "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", Decimals: 18},
			},
			Feeds: map[string]string{
				"BNB":  "0x0567F2323251f0Aab15c8dFb1967E4e8A7D42aeE", // BNB / USD
				"USDT": "0xB97Ad0E74fa7d920791E90258A6E2085088b4320", // USDT / USD
				"USDC": "0x51597f405303C4377E36123cBc172b13269EA163", // USDC / USD
			},
		},
	}
}
